//go:build !keel_lambda

package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/local/devserver"
)

func devCommand() command {
	return command{
		usage:   "[--data-dir DIR] [--addr HOST:PORT] [--allow-remote] [--dev-token TOKEN] [--store sqlite|dynamo[:TABLE]] [--artifacts fs|s3[:BUCKET]]",
		summary: "run Keel on this machine: API, local state machine, SQLite (or --store dynamo --artifacts s3) store (prints URL and token)",
		run: func(ctx context.Context, c *cli, args []string) error {
			cfg, err := c.config()
			if err != nil {
				return err
			}
			fs := c.flags("dev")
			dataDir := fs.String("data-dir", cfg.Defaults().DataDir, "data directory (store, artifacts, token); also KEEL_DATA_DIR")
			addr := fs.String("addr", cfg.Defaults().Addr, "address to listen on (port 0: a free port); also KEEL_ADDR")
			tok := fs.String("dev-token", "", "bearer token to accept (default: DIR/token, created if missing)")
			storeKind := fs.String("store", "", "sqlite (default) or dynamo[:TABLE] (table KEEL_TABLE, default keel, at AWS_ENDPOINT_URL); overrides KEEL_STORE")
			allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback --addr (plain HTTP, one bearer token: anyone who reaches it can try)")
			artsKind := fs.String("artifacts", "", "fs (default) or s3[:BUCKET] (bucket KEEL_BUCKET, default keel-artifacts); overrides KEEL_ARTIFACTS")
			rest, err := parse(fs, args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return usagef("unexpected argument %q", rest[0])
			}
			// A bad address from KEEL_ADDR is a configuration error naming
			// the variable (exit 2, no usage block); from --addr, a usage
			// error naming the flag.
			addrErr := func(format string, a ...any) error { return usagef("--addr"+format, a...) }
			if !flagSet(fs, "addr") && c.getenv("KEEL_ADDR") != "" {
				addrErr = func(format string, a ...any) error { return &configError{fmt.Errorf("KEEL_ADDR"+format, a...)} }
			}
			if _, _, err := net.SplitHostPort(*addr); err != nil {
				return addrErr(" %q: want HOST:PORT (port 0 picks a free one)", *addr)
			}
			if err := devserver.CheckAddr(*addr, *allowRemote); err != nil {
				return addrErr(": %v", err)
			}
			cfg.DataDir, cfg.Addr = *dataDir, *addr
			if err := c.buildAgentsIn(*dataDir); err != nil {
				return err
			}
			if err := applyStoreFlags(&cfg, *storeKind, *artsKind); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return &configError{err}
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			log := cfg.Logger(c.stderr)
			// Held before the store is opened: a second keel dev must not
			// open (and write through) the database a live one holds.
			def := cfg.Defaults()
			lock, err := devserver.AcquireLock(def.DataDir, def.Store)
			if err != nil {
				return err
			}
			b, err := compose.LoadBackends(ctx, cfg, log)
			if err != nil {
				lock.Close()
				return err
			}
			rt, err := compose.Open(ctx, cfg, c.app, b)
			if err != nil {
				lock.Close()
				return &configError{err}
			}
			srv, err := devserver.Start(ctx, devserver.Config{DataDir: rt.Config.DataDir, Addr: rt.Config.Addr, Token: *tok, Lock: lock,
				Runtime: rt, TaskCommand: []string{self, "task"}, StepBudget: rt.Config.StepBudget, AllowRemote: *allowRemote, Logger: log})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s dev: serving on %s (data in %s)\n", c.prog, srv.URL, rt.Config.DataDir)
			fmt.Fprintf(c.stdout, "  run viewer: %s/  (token: %s)\n", strings.TrimRight(srv.URL, "/"), srv.Token)
			if filepath.Base(rt.Config.DataDir) == devDirName {
				// What client() discovers: nothing to export below here.
				project := "."
				if abs, err := filepath.Abs(rt.Config.DataDir); err == nil {
					project = filepath.Dir(abs)
				}
				fmt.Fprintf(c.stdout, "  client commands in %s and below find it through %s; elsewhere:\n", project, filepath.Join(rt.Config.DataDir, "url"))
			} else {
				fmt.Fprintf(c.stdout, "  client commands find it with KEEL_DATA_DIR=%s, or:\n", rt.Config.DataDir)
			}
			fmt.Fprintf(c.stdout, "  export KEEL_URL=%s\n  export KEEL_TOKEN=%s\n", srv.URL, srv.Token)
			if cfg.FaultPoint != "" {
				fmt.Fprintf(c.stdout, "  fault point armed: %s (the process SIGKILLs itself there)\n", cfg.FaultPoint)
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

// buildAgentsIn exports dataDir as KEEL_DATA_DIR, then builds the
// program's agents: what an agent keeps on this machine (the research
// example's published reports) goes under the directory --data-dir named,
// not under the working directory's .keel.
func (c *cli) buildAgentsIn(dataDir string) error {
	if c.setenv != nil {
		if err := c.setenv("KEEL_DATA_DIR", dataDir); err != nil {
			return fmt.Errorf("export KEEL_DATA_DIR: %w", err)
		}
	}
	if err := c.needApp(); err != nil {
		return &configError{err}
	}
	return nil
}
