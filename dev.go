//go:build !keel_lambda

package keel

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/local/devserver"
)

// DevOptions configure [Dev].
type DevOptions struct {
	// DataDir holds the SQLite store, the artifacts and the token
	// (required; a test passes t.TempDir()). One process at a time.
	DataDir string
	// Addr to listen on; empty means 127.0.0.1:0 (a free port). A
	// non-loopback address is refused unless AllowRemote.
	Addr string
	// AllowRemote permits a non-loopback Addr: the API is then reachable
	// over plain HTTP by anyone who can reach the address, guarded only by
	// the bearer token.
	AllowRemote bool
	// Getenv supplies the rest of the configuration (KEEL_MODEL, provider
	// keys, ...); nil means none: every agent uses its own model.
	Getenv func(string) string
	// Logger gets the runtime's log; nil discards it.
	Logger *slog.Logger
}

// DevServer is an embedded runtime started by [Dev].
type DevServer struct {
	// URL is the HTTP API's base URL and Token its bearer token: what
	// KEEL_URL and KEEL_TOKEN are to the CLI.
	URL, Token string
	srv        *devserver.Server
}

// Close stops the runtime. Runs stay in DataDir: a new Dev on the same
// directory resumes them where they stopped.
func (d *DevServer) Close() error { return d.srv.Close() }

// Dev starts the embedded runtime in this process — what `prog dev` runs:
// the HTTP API, stepfunctions/run.asl.json on the local executor, SQLite and
// files under DataDir — and returns once it serves. Every tool runs in this
// process (no run spills to a child task). It is for tests and for
// programs that embed Keel; a deployment runs [Main].
func Dev(ctx context.Context, opts DevOptions, agents ...Agent) (*DevServer, error) {
	if opts.DataDir == "" {
		return nil, errors.New("keel.Dev: DataDir is required")
	}
	app, err := build(agents)
	if err != nil {
		return nil, err
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	cfg.Role, cfg.DataDir, cfg.Addr = "", opts.DataDir, opts.Addr
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	cfg.Store = "sqlite:" + filepath.Join(opts.DataDir, "keel.db")
	cfg.Artifacts = "fs:" + filepath.Join(opts.DataDir, "artifacts")
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, err
	}
	b, err := compose.LoadBackends(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	rt, err := compose.Open(ctx, cfg, app, b)
	if err != nil {
		return nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: rt.Config.DataDir, Addr: rt.Config.Addr,
		Runtime: rt, StepBudget: rt.Config.StepBudget, AllowRemote: opts.AllowRemote, Logger: log})
	if err != nil {
		return nil, err
	}
	return &DevServer{URL: srv.URL, Token: srv.Token, srv: srv}, nil
}
