package cli

import (
	"context"
	"fmt"
)

// explainCommand is `keel explain RUN_ID`: the run's story from its
// records (GET /v1/runs/{id}/explain).
func explainCommand() command {
	cmd := command{usage: "[--json] RUN_ID", summary: "tell a run's story from its records: decisions, first error, where tokens and time went, what is open, what to do next"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("explain")
		asJSON := fs.Bool("json", false, "print the story as JSON (the API's body)")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		st, err := cl.Explain(ctx, pos[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(c, st)
		}
		_, err = fmt.Fprint(c.stdout, st.Text)
		return err
	}
	return cmd
}
