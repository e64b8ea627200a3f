package cli

import (
	"context"
	"fmt"
)

// bundleCommand is `keel bundle RUN_ID -o FILE`: the run's debug bundle
// (GET /v1/runs/{id}/bundle), a tar.gz of events.jsonl,
// checkpoints.jsonl, last_state.json, trace.json, tool_calls.csv, env.txt.
func bundleCommand() command {
	cmd := command{usage: "[-o FILE] [--force] RUN_ID", summary: "download a run's debug bundle (tar.gz: events, checkpoints, last state, trace, tool calls, environment)"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("bundle")
		out := fs.String("o", "", "write to FILE, which must not exist (default: RUN_ID-debug-bundle-STATUS.tar.gz in this directory; -: stdout)")
		force := fs.Bool("force", false, "replace FILE if it exists")
		pos, cl, err := c.connect(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		b, name, err := cl.Bundle(ctx, pos[0])
		if err != nil {
			return err
		}
		if *out == "-" {
			_, err = c.stdout.Write(b)
			return err
		}
		if *out == "" {
			if name == "" {
				name = "debug-bundle.tar.gz"
			}
			*out = pos[0] + "-" + name
		}
		if err := writeNew(*out, b, *force); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "wrote %s (%d bytes)\n", *out, len(b))
		return nil
	}
	return cmd
}
