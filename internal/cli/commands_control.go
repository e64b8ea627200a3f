package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// decideCommand is approve or deny: it fetches the approval, shows the
// exact action and its hash, asks, and sends the decision with that hash —
// so the server refuses it (409) if the action changed in between.
func decideCommand(decision string) command {
	verb := map[string]string{api.DecisionApprove: "approve", api.DecisionDeny: "deny"}[decision]
	cmd := command{
		usage:   "[--yes] [--reason TEXT] RUN_ID [APPROVAL_ID]",
		summary: verb + " the exact action a run waits on (shown with its args hash before asking)",
		fields:  map[string]string{"reason": "--reason", "args_hash": "the shown args_hash", "decision": verb},
	}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags(verb)
		yes := fs.Bool("yes", false, "do not ask (for scripts)")
		reason := fs.String("reason", "", "why, recorded with the decision")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usagef("missing argument RUN_ID")
		}
		if len(pos) > 2 {
			return usagef("unexpected argument %q", pos[2])
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		var a api.Approval
		if len(pos) == 2 {
			if a, err = cl.GetApproval(ctx, pos[0], pos[1]); err != nil {
				return err
			}
		} else {
			aps, err := cl.ListApprovals(ctx, pos[0])
			if err != nil {
				return err
			}
			var pending []api.Approval
			for _, x := range aps {
				if x.Status == run.ApprovalPending {
					pending = append(pending, x)
				}
			}
			switch len(pending) {
			case 0:
				return &api.Error{Status: 409, Code: api.CodeApprovalNotPending, Message: "run " + pos[0] + " has no pending approval"}
			case 1:
				a = pending[0]
			default:
				ids := make([]string, len(pending))
				for i, p := range pending {
					ids[i] = p.ApprovalID + " (" + termSafe(p.Tool) + ")"
				}
				return usagef("run %s waits on %d approvals; name one as APPROVAL_ID: %s", pos[0], len(pending), strings.Join(ids, ", "))
			}
		}
		if a.Status != run.ApprovalPending {
			return &api.Error{Status: 409, Code: api.CodeApprovalNotPending, Message: fmt.Sprintf("approval %s is already %s", a.ApprovalID, a.Status)}
		}
		// What a person approves is what they read: the tool and args
		// with bidi overrides and controls shown, not acted on.
		fmt.Fprintf(c.stdout, "run %s asks to call %s (%s) with:\n%s\nargs_hash %s\n", a.RunID, termSafe(a.Tool), termSafe(string(a.Mode)), termSafeText(indentJSON(a.Args)), a.ArgsHash)
		warned := warnBeforeApprove(ctx, c, cl, decision, a.RunID)
		if !*yes {
			fmt.Fprintf(c.stdout, "%s this exact action? [y/N] ", strings.ToUpper(verb[:1])+verb[1:])
			ans, err := c.stdin.ReadString('\n')
			if err != nil && strings.TrimSpace(ans) == "" {
				return &declinedError{"no answer on stdin; nothing was sent (use --yes in scripts)"}
			}
			if a := strings.ToLower(strings.TrimSpace(ans)); a != "y" && a != "yes" {
				return &declinedError{"not confirmed; nothing was sent"}
			}
		}
		got, err := cl.Decide(ctx, a.RunID, a.ApprovalID, api.DecisionRequest{Decision: decision, ArgsHash: a.ArgsHash, Reason: *reason})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s: approval %s of run %s is %s%s\n", verb, got.ApprovalID, got.RunID, got.Status, warned)
		return nil
	}
	return cmd
}

func cancelCommand() command {
	cmd := command{usage: "RUN_ID", summary: "ask a run to stop (an effect in flight is not undone)"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("cancel")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		res, err := cl.Cancel(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "cancel requested for run %s (status %s)", res.Run.RunID, res.Run.Status)
		if n := len(res.CancelledApprovals); n > 0 {
			fmt.Fprintf(c.stdout, "; %d pending approval(s) withdrawn", n)
		}
		fmt.Fprintln(c.stdout)
		return nil
	}
	return cmd
}

func inputCommand() command {
	cmd := command{usage: "RUN_ID TEXT... (TEXT - reads stdin)", summary: "send input to an active run, under its input policy",
		fields: map[string]string{"text": "TEXT"}}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("input")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usagef("missing argument RUN_ID")
		}
		if len(pos) == 1 {
			return usagef("missing argument TEXT")
		}
		text, err := c.readText(pos[1:])
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			return usagef("argument TEXT is empty")
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		res, err := cl.Input(ctx, pos[0], text)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "input %s accepted by run %s (policy %s)\n", res.InputID, res.RunID, res.Policy)
		return nil
	}
	return cmd
}

func forkCommand() command {
	cmd := command{
		usage:   "[--checkpoint ID] [--idempotency-key KEY] [--watch] [--json] RUN_ID",
		summary: "start a new run from one of RUN_ID's checkpoints (default: its current one)",
		fields:  map[string]string{"checkpoint_id": "--checkpoint", "Idempotency-Key": "--idempotency-key"},
	}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("fork")
		cp := fs.String("checkpoint", "", "the checkpoint to fork from (the checkpoints command lists them)")
		key := fs.String("idempotency-key", "", "the same key returns the same fork (default: a fresh key)")
		watch := fs.Bool("watch", false, "follow the new run until it ends")
		asJSON := fs.Bool("json", false, "print the new run as JSON")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		if *cp == "" {
			r, err := cl.GetRun(ctx, pos[0])
			if err != nil {
				return err
			}
			if r.CheckpointID == "" {
				return usagef("--checkpoint is required: run %s has no current checkpoint", r.RunID)
			}
			*cp = r.CheckpointID
		}
		if *key == "" {
			*key = run.NewID("cli")
		}
		child, _, err := cl.Fork(ctx, pos[0], *cp, *key)
		if err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(c.stdout, "run %s started from run %s at checkpoint %s\n", child.RunID, child.ParentRunID, child.ForkCheckpointID)
		}
		if *watch {
			return watchRun(ctx, c, cl, child.RunID, *asJSON)
		}
		if *asJSON {
			return printJSON(c, child)
		}
		return nil
	}
	return cmd
}
