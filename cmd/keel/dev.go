package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/keelrun/keel/internal/awswire"
	"github.com/keelrun/keel/internal/devserver"
	"github.com/keelrun/keel/internal/faults"
	"github.com/keelrun/keel/internal/longtask"
	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/model/provider"
	"github.com/keelrun/keel/internal/setup"
)

func devCommand() command {
	return command{
		usage:   "[--data-dir DIR] [--addr HOST:PORT] [--dev-token TOKEN]",
		summary: "run Keel on this machine: API, local state machine, SQLite store (prints URL and token)",
		run: func(ctx context.Context, c *cli, args []string) error {
			fs := c.flags("dev")
			dataDir := fs.String("data-dir", envOr(c.getenv, "KEEL_DATA_DIR", ".keel"), "data directory (store, artifacts, token)")
			addr := fs.String("addr", envOr(c.getenv, "KEEL_ADDR", "127.0.0.1:8080"), "address to listen on (port 0: a free port)")
			tok := fs.String("dev-token", "", "bearer token to accept (default: DIR/token, created if missing)")
			rest, err := parse(fs, args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return usagef("unexpected argument %q", rest[0])
			}
			cfg, err := setup.FromEnv(c.getenv, *dataDir)
			if err != nil {
				return usagef("%v", err)
			}
			fp, err := faults.Parse(c.getenv("KEEL_FAULTPOINT"))
			if err != nil {
				return usagef("%v", err)
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			log := newLogger(c)
			b := backends()
			b.Faults = fp
			srv, err := devserver.Start(ctx, devserver.Config{DataDir: *dataDir, Addr: *addr, Token: *tok, Setup: cfg,
				Backends: b, TaskCommand: []string{self, "task"}, Faults: fp, Logger: log})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "keel dev: serving on %s (data in %s)\n", srv.URL, *dataDir)
			fmt.Fprintf(c.stdout, "  export KEEL_URL=%s\n  export KEEL_TOKEN=%s\n", srv.URL, srv.Token)
			if fp.Name() != "" {
				fmt.Fprintf(c.stdout, "  fault point armed: %s (the process SIGKILLs itself there)\n", fp.Name())
			}
			go func() {
				<-ctx.Done()
				srv.Close()
			}()
			err = srv.Wait()
			srv.Close()
			return err
		},
	}
}

// taskCommand is the long-running task run as a child process by keel dev
// (on AWS, tasks/fargate runs the same code in Fargate).
func taskCommand() command {
	return command{
		usage:   "",
		summary: "(internal) the long-running task keel dev starts for a spilled run",
		run: func(ctx context.Context, c *cli, args []string) error {
			cfg, err := setup.FromEnv(c.getenv, "")
			if err != nil {
				return usagef("%v", err)
			}
			fp, err := faults.Parse(c.getenv("KEEL_FAULTPOINT"))
			if err != nil {
				return usagef("%v", err)
			}
			endpoint := c.getenv("KEEL_SFN_ENDPOINT")
			if endpoint == "" {
				return usagef("KEEL_SFN_ENDPOINT is not set (keel dev sets it for its task)")
			}
			stop := make(chan struct{})
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM)
			go func() { <-sig; close(stop) }()
			b := backends()
			b.Faults = fp
			return longtask.Main(context.WithoutCancel(ctx), longtask.MainConfig{
				Setup: cfg, Backends: b, Tokens: awswire.Tokens{Client: awswire.LocalSFN(endpoint, c.getenv("KEEL_SFN_TOKEN"))},
				RunID: c.getenv("KEEL_RUN_ID"), TaskToken: c.getenv("KEEL_TASK_TOKEN"), Faults: fp, Logger: newLogger(c),
			}, stop)
		},
	}
}

// backends are the optional parts this binary carries: the model
// providers (keys and settings from the environment; Bedrock with the
// default AWS configuration).
func backends() setup.Backends {
	return setup.Backends{NewModel: func(ctx context.Context, spec string) (model.Model, error) {
		deps := provider.Deps{Getenv: os.Getenv}
		if strings.HasPrefix(spec, "bedrock:") {
			cfg, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("AWS configuration for bedrock: %w", err)
			}
			deps.AWS = &cfg
		}
		return provider.New(ctx, spec, deps)
	}}
}

func newLogger(c *cli) *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(c.getenv("KEEL_LOG_LEVEL")) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
}

func envOr(getenv func(string) string, k, def string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return def
}
