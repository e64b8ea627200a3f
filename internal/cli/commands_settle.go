package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/store"
)

// operationsCommand lists a run's operations: what it did, or tried to do,
// at its destinations.
func operationsCommand() command {
	cmd := command{usage: "RUN_ID", summary: "list a run's operations (its effects at destinations) and their status"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("operations")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		list, err := cl.Operations(ctx, pos[0])
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OPERATION\tTOOL\tDESTINATION\tSTATUS\tEXTERNAL ID\tATTEMPTS")
		for _, op := range list.Operations {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", op.OperationID, termSafe(op.Tool), termSafe(op.Destination), op.Status, termSafe(op.ExternalID), op.Attempts)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		settleHints(c, list.Operations)
		return nil
	}
	return cmd
}

// settleHints prints, for each operation that needs a person, where to
// look and the command that records the answer.
func settleHints(c *cli, ops []api.Operation) {
	for _, op := range ops {
		if op.Status == "needs_human" {
			fmt.Fprintf(c.stdout, "\n%s needs a person: ask %s whether it happened (idempotency key %s), then:\n  %s settle %s %s --happened|--not-happened|--give-up --reason TEXT\n",
				op.OperationID, termSafe(op.Destination), termSafe(op.IdempotencyKey), c.prog, op.RunID, op.OperationID)
		}
	}
}

// settleCommand records what a person established about an operation only
// a person can settle, and lets the run go on.
func settleCommand() command {
	cmd := command{usage: "RUN_ID OPERATION_ID (--happened [--external-id ID] [--result JSON] | --not-happened | --give-up) --reason TEXT",
		summary: "record what you established about a needs_human operation; the run goes on, the model told the truth",
		fields:  map[string]string{"outcome": "--happened, --not-happened or --give-up", "reason": "--reason", "external_id": "--external-id", "result": "--result"}}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("settle")
		happened := fs.Bool("happened", false, "it took effect at the destination")
		notHappened := fs.Bool("not-happened", false, "it did not take effect: the run dispatches it once more, with the same operation id")
		giveUp := fs.Bool("give-up", false, "nobody can find out: the run ends failed with --reason")
		ext := fs.String("external-id", "", "the destination's id for it (with --happened)")
		result := fs.String("result", "", "the destination's result, JSON (with --happened)")
		reason := fs.String("reason", "", "what you established, or why nobody can (required; recorded with your name)")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) < 2 {
			return usagef("missing argument %s", []string{"RUN_ID", "OPERATION_ID"}[len(pos)])
		}
		if len(pos) > 2 {
			return usagef("unexpected argument %q", pos[2])
		}
		req := api.SettleRequest{ExternalID: *ext, Reason: *reason}
		n := 0
		for flag, outcome := range map[*bool]store.SettleOutcome{happened: store.SettleHappened, notHappened: store.SettleNotHappened, giveUp: store.SettleGiveUp} {
			if *flag {
				n++
				req.Outcome = string(outcome)
			}
		}
		if n != 1 {
			return usagef("give exactly one of --happened, --not-happened, --give-up")
		}
		if *reason == "" {
			return usagef("--reason is required: what you established at the destination, or why nobody can")
		}
		if *result != "" {
			if !json.Valid([]byte(*result)) {
				return usagef("--result must be JSON")
			}
			req.Result = json.RawMessage(*result)
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		r, err := cl.Settle(ctx, pos[0], pos[1], req)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "settled operation %s as %s; run %s is %s\n", pos[1], req.Outcome, r.RunID, r.Status)
		return nil
	}
	return cmd
}
