package cli

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/store"
)

// resolveCommand records a person's decision on a run the version check
// stopped (needs_human, agent_upgrade_blocked): finish it under the
// version that wrote it, or deny the calls it waits to make.
func resolveCommand() command {
	cmd := command{usage: "RUN_ID (--old-version | --deny) --reason TEXT",
		summary: "decide for a run an agent upgrade stopped: --old-version (asked of the old build, running again) finishes it there; --deny tells the model its calls were not made and it goes on under this version",
		fields:  map[string]string{"decision": "--old-version or --deny", "reason": "--reason"}}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("resolve")
		old := fs.Bool("old-version", false, "continue under the version that wrote the run's records: its approvals cancelled by the upgrade are asked again (the deployment asked must run that version)")
		deny := fs.Bool("deny", false, "deny the calls the run waits to make: the model is told with --reason and may ask again under this deployment's version")
		reason := fs.String("reason", "", "why (required; recorded with your name; with --deny, what the model is told)")
		pos, err := parseArgs(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		req := api.ResolveRequest{Reason: *reason}
		switch {
		case *old == *deny:
			return usagef("give exactly one of --old-version, --deny")
		case *old:
			req.Decision = string(store.ResolveOldVersion)
		default:
			req.Decision = string(store.ResolveDeny)
		}
		if *reason == "" {
			return usagef("--reason is required: why (with --deny, what the model is told)")
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		r, err := cl.Resolve(ctx, pos[0], req)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "resolved run %s with %s; it is %s\n", r.RunID, req.Decision, r.Status)
		return nil
	}
	return cmd
}
