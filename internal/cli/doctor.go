package cli

import (
	"context"
	"fmt"
)

// doctorCommand is `keel doctor`: the ten production questions answered
// from the facts the deployment reports (GET /v1/deployment).
func doctorCommand() command {
	cmd := command{usage: "[--json] [--strict]", summary: "answer the ten production questions from the deployment's own configuration; gaps are answers that rest on the prompt"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("doctor")
		asJSON := fs.Bool("json", false, "print the facts and answers as JSON")
		strict := fs.Bool("strict", false, "exit 1 when any answer has a gap")
		_, cl, err := c.connect(fs, args)
		if err != nil {
			return err
		}
		rep, err := cl.Deployment(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			err = printJSON(c, rep)
		} else {
			_, err = fmt.Fprint(c.stdout, rep.Text)
		}
		if err == nil && *strict && rep.Gaps > 0 {
			return fmt.Errorf("doctor: %d gap(s) (--strict)", rep.Gaps)
		}
		return err
	}
	return cmd
}
