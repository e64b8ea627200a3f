package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/faults"
	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/setup"
)

// stepCommand runs one harness Step of a run directly on the store named
// by KEEL_STORE, outside any state machine: for operators recovering a run
// by hand, and for the crash suite's two-writer test. It prints the
// decision as JSON.
func stepCommand() command {
	return command{
		usage:   "RUN_ID [--budget DURATION] [--owner NAME]",
		summary: "(operator) run one harness step of a run directly on KEEL_STORE and print the decision",
		run: func(ctx context.Context, c *cli, args []string) error {
			fs := c.flags("step")
			budget := fs.Duration("budget", 30*time.Second, "time budget of the step")
			owner := fs.String("owner", "", "lease owner name (default KEEL_OWNER or host/pid)")
			dataDir := fs.String("data-dir", envOr(c.getenv, "KEEL_DATA_DIR", ".keel"), "data directory for the default store")
			rest, err := parse(fs, args)
			if err != nil {
				return err
			}
			if len(rest) != 1 {
				return usagef("want exactly one RUN_ID")
			}
			if *budget <= 0 {
				return usagef("--budget must be positive")
			}
			cfg, err := setup.FromEnv(c.getenv, *dataDir)
			if err != nil {
				return usagef("%v", err)
			}
			if *owner != "" {
				cfg.Owner = *owner
			}
			fp, err := faults.Parse(c.getenv("KEEL_FAULTPOINT"))
			if err != nil {
				return usagef("%v", err)
			}
			b, err := backends(ctx, c, cfg)
			if err != nil {
				return err
			}
			b.Faults = fp
			parts, err := cfg.Open(ctx, b)
			if err != nil {
				return err
			}
			defer parts.Close()
			h, err := harness.New(harness.Options{Store: parts.Store, Artifacts: parts.Artifacts, Agents: parts.Agents,
				Owner: cfg.Owner, Faults: fp, Logger: newLogger(c)})
			if err != nil {
				return err
			}
			d, err := h.Step(ctx, rest[0], *budget)
			var fe *harness.FencedError
			var be *harness.BusyError
			switch {
			case errors.As(err, &fe):
				fmt.Fprintf(c.stdout, "{\"fenced\":true,\"error\":%q}\n", err.Error())
				return &conflictError{err}
			case errors.As(err, &be):
				fmt.Fprintf(c.stdout, "{\"busy\":true,\"error\":%q}\n", err.Error())
				return &conflictError{err}
			case err != nil:
				return err
			}
			out, _ := json.Marshal(d)
			fmt.Fprintln(c.stdout, string(out))
			return nil
		},
	}
}

// conflictError exits with the conflict code: another worker owns the run.
type conflictError struct{ err error }

func (e *conflictError) Error() string { return e.err.Error() }
func (e *conflictError) Unwrap() error { return e.err }
