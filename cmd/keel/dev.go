package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

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
		usage:   "[--data-dir DIR] [--addr HOST:PORT] [--dev-token TOKEN] [--store sqlite|dynamo[:TABLE]] [--artifacts fs|s3[:BUCKET]]",
		summary: "run Keel on this machine: API, local state machine, SQLite (or --store dynamo --artifacts s3) store (prints URL and token)",
		run: func(ctx context.Context, c *cli, args []string) error {
			fs := c.flags("dev")
			dataDir := fs.String("data-dir", envOr(c.getenv, "KEEL_DATA_DIR", ".keel"), "data directory (store, artifacts, token)")
			addr := fs.String("addr", envOr(c.getenv, "KEEL_ADDR", "127.0.0.1:8080"), "address to listen on (port 0: a free port)")
			tok := fs.String("dev-token", "", "bearer token to accept (default: DIR/token, created if missing)")
			storeKind := fs.String("store", "", "sqlite (default) or dynamo[:TABLE] (table KEEL_TABLE, default keel, at AWS_ENDPOINT_URL); overrides KEEL_STORE")
			artsKind := fs.String("artifacts", "", "fs (default) or s3[:BUCKET] (bucket KEEL_BUCKET, default keel-artifacts); overrides KEEL_ARTIFACTS")
			rest, err := parse(fs, args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return usagef("unexpected argument %q", rest[0])
			}
			if _, _, err := net.SplitHostPort(*addr); err != nil {
				return usagef("--addr %q: want HOST:PORT (port 0 picks a free one)", *addr)
			}
			getenv, err := devStores(c.getenv, *storeKind, *artsKind)
			if err != nil {
				return err
			}
			cfg, err := setup.FromEnv(getenv, *dataDir)
			if err != nil {
				return usagef("%v", err)
			}
			fp, err := faults.Parse(c.getenv("KEEL_FAULTPOINT"))
			if err != nil {
				return usagef("%v", err)
			}
			budget, leaseTTL, err := devDurations(c.getenv)
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			log := newLogger(c)
			b, err := backends(ctx, c, cfg)
			if err != nil {
				return err
			}
			b.Faults = fp
			srv, err := devserver.Start(ctx, devserver.Config{DataDir: *dataDir, Addr: *addr, Token: *tok, Setup: cfg,
				Backends: b, TaskCommand: []string{self, "task"}, StepBudget: budget, LeaseTTL: leaseTTL, Faults: fp, Logger: log})
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
			b, err := backends(ctx, c, cfg)
			if err != nil {
				return err
			}
			b.Faults = fp
			tokens, err := awswire.LocalSFN(endpoint, c.getenv("KEEL_SFN_TOKEN"))
			if err != nil {
				return err
			}
			return longtask.Main(context.WithoutCancel(ctx), longtask.MainConfig{
				Setup: cfg, Backends: b, Tokens: tokens,
				RunID: c.getenv("KEEL_RUN_ID"), TaskToken: c.getenv("KEEL_TASK_TOKEN"), Faults: fp, Logger: newLogger(c),
			}, stop)
		},
	}
}

// backends are the optional parts this binary carries: the DynamoDB store
// and S3 artifacts, when the configuration names them, through the usual
// AWS settings (AWS_ENDPOINT_URL for LocalStack or any compatible server;
// the region defaults to us-east-1 so a local endpoint needs no more).
//
// The model providers come with their keys and settings from the
// environment (Bedrock with the default AWS configuration).
func backends(ctx context.Context, c *cli, cfg setup.Config) (setup.Backends, error) {
	if !strings.HasPrefix(cfg.Store, "dynamo:") && !strings.HasPrefix(cfg.Artifacts, "s3:") {
		return setup.Backends{NewModel: newModel}, nil
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return setup.Backends{}, fmt.Errorf("AWS configuration for %s / %s: %w", cfg.Store, cfg.Artifacts, err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	pathStyle := c.getenv("AWS_ENDPOINT_URL") != "" || c.getenv("AWS_ENDPOINT_URL_S3") != ""
	b := awswire.Backends(awsCfg, awswire.Options{S3PathStyle: pathStyle})
	b.NewModel = newModel
	return b, nil
}

// newModel builds a provider model from a spec such as
// "anthropic:claude-sonnet-4-5".
func newModel(ctx context.Context, spec string) (model.Model, error) {
	deps := provider.Deps{Getenv: os.Getenv}
	if strings.HasPrefix(spec, "bedrock:") {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("AWS configuration for bedrock: %w", err)
		}
		deps.AWS = &cfg
	}
	return provider.New(ctx, spec, deps)
}

// devStores returns getenv with KEEL_STORE and KEEL_ARTIFACTS set from the
// --store and --artifacts flags, when given.
func devStores(getenv func(string) string, st, arts string) (func(string) string, error) {
	over := map[string]string{}
	kind, arg, _ := strings.Cut(st, ":")
	switch kind {
	case "":
	case "sqlite":
		if arg != "" {
			over["KEEL_STORE"] = st
		} else {
			over["KEEL_STORE"] = "-"
		}
	case "dynamo":
		if arg == "" {
			arg = envOr(getenv, "KEEL_TABLE", "keel")
		}
		over["KEEL_STORE"] = "dynamo:" + arg
	default:
		return nil, usagef("--store %q: want sqlite[:PATH] or dynamo[:TABLE]", st)
	}
	kind, arg, _ = strings.Cut(arts, ":")
	switch kind {
	case "":
	case "fs":
		if arg != "" {
			over["KEEL_ARTIFACTS"] = arts
		} else {
			over["KEEL_ARTIFACTS"] = "-"
		}
	case "s3":
		if arg == "" {
			arg = envOr(getenv, "KEEL_BUCKET", "keel-artifacts")
		}
		over["KEEL_ARTIFACTS"] = "s3:" + arg
	default:
		return nil, usagef("--artifacts %q: want fs[:DIR] or s3[:BUCKET]", arts)
	}
	return func(k string) string {
		if v, ok := over[k]; ok {
			if v == "-" { // the flag asked for the default
				return ""
			}
			return v
		}
		return getenv(k)
	}, nil
}

// devDurations reads KEEL_STEP_BUDGET (how long one Step may run) and
// KEEL_LEASE_TTL (how long its lease outlives that budget); unset means
// the defaults (60s and 30s). Their sum is how long a run's lease outlives
// a keel dev that crashed on DynamoDB, where a restart does not end it.
func devDurations(getenv func(string) string) (budget, leaseTTL time.Duration, err error) {
	read := func(k string) (time.Duration, error) {
		v := getenv(k)
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, usagef("%s=%q: want a positive duration such as 2s", k, v)
		}
		return d, nil
	}
	if budget, err = read("KEEL_STEP_BUDGET"); err != nil {
		return 0, 0, err
	}
	if leaseTTL, err = read("KEEL_LEASE_TTL"); err != nil {
		return 0, 0, err
	}
	return budget, leaseTTL, nil
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
