package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/harness"
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
			cfg, err := c.config()
			if err != nil {
				return err
			}
			dataDir := fs.String("data-dir", cfg.Defaults().DataDir, "data directory for the default store")
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
			cfg.DataDir = *dataDir
			if *owner != "" {
				cfg.Owner = *owner
			}
			if cfg.Owner == "" {
				host, _ := os.Hostname()
				cfg.Owner = fmt.Sprintf("%s/%d", host, os.Getpid())
			}
			log := cfg.Logger(c.stderr)
			b, err := compose.LoadBackends(ctx, cfg, log)
			if err != nil {
				return err
			}
			rt, err := compose.Open(ctx, cfg, c.app, b)
			if err != nil {
				return err
			}
			defer rt.Close()
			h, err := rt.Harness(cfg.Owner, false)
			if err != nil {
				return err
			}
			d, err := h.Step(ctx, rest[0], *budget)
			var fe *harness.FencedError
			switch {
			case errors.As(err, &fe):
				fmt.Fprintf(c.stdout, "{\"fenced\":true,\"error\":%q}\n", err.Error())
				return &conflictError{err}
			case err == nil && d.Busy:
				fmt.Fprintf(c.stdout, "{\"busy\":true,\"error\":%q}\n", d.Error)
				return &conflictError{errors.New(d.Error)}
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
