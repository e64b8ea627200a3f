package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// verifyCommand is `keel verify RUN_ID`: it reads the run's audit export
// (GET /v1/runs/{id}/audit), checks the hash chain itself rather than
// trusting the server's verdict, prints the chain head to keep elsewhere,
// and fails naming each event that was edited, deleted or moved.
func verifyCommand() command {
	cmd := command{usage: "[--json] [--export FILE] RUN_ID",
		summary: "check a run's tamper-evident event log and print its chain head"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("verify")
		asJSON := fs.Bool("json", false, "print the audit export as JSON")
		export := fs.String("export", "", "also write the audit export to `FILE` (to verify offline; see docs/operating.md)")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		x, err := cl.Audit(ctx, pos[0])
		if err != nil {
			return err
		}
		if *export != "" {
			b, err := json.MarshalIndent(x, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(*export, append(b, '\n'), 0o644); err != nil {
				return err
			}
		}
		if x.Corrupt != "" {
			return fmt.Errorf("verify %s: the database is corrupt (%s): its log cannot be checked; restore a copy", x.RunID, x.Corrupt)
		}
		problems, err := x.Recheck()
		if err != nil {
			return err
		}
		if *asJSON {
			if err := printJSON(c, x); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(c.stdout, "run %s (%s): %d events\nchain head: seq %d %s\n", x.RunID, x.Status, len(x.Events), x.Head.Seq, x.Head.Hash)
			for _, p := range problems {
				fmt.Fprintf(c.stdout, "TAMPERED %s\n", p)
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("verify %s: the event log does not match its hash chain (%d problems, first: %s)", x.RunID, len(problems), problems[0])
		}
		if !x.Verified {
			return errors.New("verify: the server reports problems this check does not find: " + fmt.Sprint(x.Problems))
		}
		if !*asJSON {
			fmt.Fprintln(c.stdout, "verified: every event hashes to its hash and links to the one before it")
		}
		return nil
	}
	return cmd
}
