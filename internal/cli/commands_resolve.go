package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
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

// upgradeWarning is what a person about to approve must know when the
// deployment's Step would stop the run (GET /v1/runs/{id}'s
// upgrade_blocks): "" when it would not.
func upgradeWarning(prog string, r api.Run) string {
	v := r.UpgradeBlocks
	if v == nil {
		return ""
	}
	return fmt.Sprintf("this deployment runs agent version %s, and its Step would stop this run for a person (agent version %s → %s: %s): "+
		"an approval given now is not applied; deny instead (%s deny %s), or decide with version %s's build running again",
		orDash(agentver.Short(v.To)), orDash(agentver.Short(v.From)), orDash(agentver.Short(v.To)), v.Reason(), prog, r.RunID, orDash(agentver.Short(v.From)))
}

// upgradeRows are show's rows of the version check: the warning of a run
// the deployment's Step would stop, the way out of one it stopped.
func upgradeRows(prog string, r api.Run, row func(k, v string)) {
	if w := upgradeWarning(prog, r); w != "" {
		row("warning", w)
	}
	if r.Status == run.StatusNeedsHuman && strings.HasPrefix(r.Error, harness.UpgradeBlockedPrefix) {
		row("next", fmt.Sprintf("%s resolve %s --old-version|--deny --reason TEXT, or %s cancel %s (%s explain %s says which)", prog, r.RunID, prog, r.RunID, prog, r.RunID))
	}
}

// warnBeforeApprove prints the deployment's version check before a
// person approves what its Step would refuse to apply, and returns what
// the answer then adds ("" when there was nothing to warn of); a failure
// to read the run leaves the warning out (the decision still says what
// it says).
func warnBeforeApprove(ctx context.Context, c *cli, cl *client.Client, decision, runID string) string {
	if decision != api.DecisionApprove {
		return ""
	}
	r, err := cl.GetRun(ctx, runID)
	if err != nil {
		return ""
	}
	w := upgradeWarning(c.prog, r)
	if w == "" {
		return ""
	}
	fmt.Fprintf(c.stdout, "warning: %s\n", termSafeText(w))
	return fmt.Sprintf(", and not applied by this deployment: the run stops for a person (%s explain %s)", c.prog, runID)
}
