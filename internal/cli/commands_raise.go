package cli

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/api"
)

// raiseCommand answers a run paused at a limit: raise the limit by the
// amount the pause asked for, or stop the run.
func raiseCommand() command {
	cmd := command{usage: "[--stop] [--limit LIMIT] [--reason TEXT] RUN_ID",
		summary: "raise the limit a paused run waits on by the amount it asked for, or --stop it",
		fields:  map[string]string{"decision": "--stop", "limit": "--limit", "reason": "--reason"}}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("raise")
		stop := fs.Bool("stop", false, "stop the run instead: it fails at the limit")
		limit := fs.String("limit", "", "the limit you mean (max_steps, max_tool_calls, max_tokens, max_spend): refused if the run paused at another")
		reason := fs.String("reason", "", "why, recorded with your decision")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		req := api.LimitDecisionRequest{Decision: api.LimitRaise, Limit: *limit, Reason: *reason}
		if *stop {
			req.Decision = api.LimitStop
		}
		a, err := cl.DecideLimit(ctx, pos[0], req)
		if err != nil {
			return err
		}
		verb := "raised"
		if *stop {
			verb = "stopped"
		}
		fmt.Fprintf(c.stdout, "%s: %s %s (approval %s)\n", pos[0], verb, termSafe(string(a.Args)), a.ApprovalID)
		return nil
	}
	return cmd
}
