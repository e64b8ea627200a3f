package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/agentver"
)

// upgradeCheckCommand previews a deploy: the program it runs in is the
// new one; the runs in flight are read from a store (--data-dir, or the
// configured table) or from a deployed API (--api). It changes nothing
// (compose.PreviewUpgrade, compose.PreviewUpgradeAPI).
func upgradeCheckCommand() command {
	return command{
		usage:   "[--data-dir DIR | --api] [--json] [--strict]",
		summary: "before a deploy: say, run by run, whether this program would continue, move or stop each run in flight (in a store, or behind the API with --api), and why (changes nothing)",
		run: func(ctx context.Context, c *cli, args []string) error {
			fs := c.flags("upgrade-check")
			cfg, err := c.config()
			if err != nil {
				return err
			}
			dataDir := fs.String("data-dir", cfg.Defaults().DataDir, "data directory of the store to read (keel dev's)")
			fromAPI := fs.Bool("api", false, "read the runs in flight from the API the client commands use (--url, --token)")
			asJSON := fs.Bool("json", false, "print the verdicts as JSON, one object per run")
			strict := fs.Bool("strict", false, "exit 1 when a run would stop for a person (for a deploy script)")
			rest, err := parse(fs, args)
			if err != nil {
				return err
			}
			if len(rest) != 0 {
				return usagef("upgrade-check takes no arguments")
			}
			if *fromAPI && flagSet(fs, "data-dir") {
				return usagef("--api and --data-dir exclude each other: --api reads the runs from a deployed API, --data-dir from a store")
			}
			cfg.DataDir = *dataDir
			b, err := compose.LoadBackends(ctx, cfg, cfg.Logger(c.stderr))
			if err != nil {
				return err
			}
			var rows []compose.UpgradeRow
			if *fromAPI {
				cl, err := c.client()
				if err != nil {
					return err
				}
				rows, err = compose.PreviewUpgradeAPI(ctx, cfg, c.app, b, cl)
				if err != nil {
					return fmt.Errorf("the API at %s: %w", cl.BaseURL(), err)
				}
			} else if rows, err = compose.PreviewUpgrade(ctx, cfg, c.app, b); err != nil {
				return err
			}
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				for _, r := range rows {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
			} else {
				printUpgrade(c, rows)
			}
			if *strict {
				return stopsForAPerson(rows)
			}
			return nil
		},
	}
}

// stopsForAPerson is upgrade-check --strict's verdict: an error (exit 1)
// naming the runs this program would stop for a person, nil when none.
func stopsForAPerson(rows []compose.UpgradeRow) error {
	var stop []string
	for _, r := range rows {
		if r.Verdict.Action == agentver.Stop {
			stop = append(stop, r.RunID)
		}
	}
	if len(stop) == 0 {
		return nil
	}
	return &declinedError{fmt.Sprintf("--strict: %d run(s) would stop for a person: %s", len(stop), strings.Join(stop, ", "))}
}

// flagSet reports whether the command line gave the flag, so that a
// default is not taken for a choice.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func printUpgrade(c *cli, rows []compose.UpgradeRow) {
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "no runs in flight")
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tAGENT\tSTATUS\tFROM\tTO\tVERDICT\tWHY")
	counts := map[agentver.Action]int{}
	for _, r := range rows {
		v := r.Verdict
		counts[v.Action]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Agent, r.Status,
			orDash(agentver.Short(v.From)), orDash(agentver.Short(v.To)), verdictWord(v.Action), termSafeText(v.Reason()))
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "%d continue, %d move, %d stop for a person; nothing was changed\n",
		counts[agentver.Continue], counts[agentver.Move], counts[agentver.Stop])
}

func verdictWord(a agentver.Action) string {
	if a == agentver.Stop {
		return "stop for a person"
	}
	return string(a)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
