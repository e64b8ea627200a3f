package cli

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
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
		// The story quotes the run (its input, errors, tools): escaped.
		_, err = fmt.Fprint(c.stdout, termSafeText(ownCommands(st.Text, c.prog)))
		return err
	}
	return cmd
}

// ownCommands rewrites the commands the API suggests ("keel approve ...")
// in the name of the program the user runs: the API cannot know it.
func ownCommands(text, prog string) string {
	if prog == "" || prog == "keel" {
		return text
	}
	// Built here, not in a package variable: commands() refers back to
	// this function through explainCommand.
	names := make([]string, 0, len(commands()))
	for n := range commands() {
		names = append(names, regexp.QuoteMeta(n))
	}
	sort.Strings(names)
	keelCommand := regexp.MustCompile(`\bkeel (` + strings.Join(names, "|") + `)\b`)
	return keelCommand.ReplaceAllString(text, strings.ReplaceAll(prog, "$", "$$")+" $1")
}
