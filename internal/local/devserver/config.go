// Config and its defaults: what a caller of Start can set, kept apart from how Start wires it (split from devserver.go to keep files short).

package devserver

import (
	"errors"
	"log/slog"
	"time"

	"github.com/keelrun/keel/internal/compose"
)

// Config configures a dev server.
type Config struct {
	// DataDir holds keel.db, artifacts/, published/, token and url.
	DataDir string
	// Addr to listen on (default 127.0.0.1:8080; port 0 picks a free one).
	Addr string
	// Token is the bearer token; default: the one in DataDir/token, or a
	// new random one written there.
	Token string
	// Principal the token authenticates as (default "dev").
	Principal string
	// Runtime is the opened store, artifacts and agents (compose.Open);
	// its Config.LeaseTTL is how long a Step's lease outlives its budget.
	// On a shared store (DynamoDB) a crashed keel dev's lease is not ended
	// at restart, so budget+LeaseTTL is how long the next incarnation
	// waits before it can step the run. Start takes it over: Close closes
	// it, and so does Start when it fails.
	Runtime *compose.Runtime
	// Lock is the data directory's and database's lock (AcquireLock),
	// taken before Runtime was opened; Start takes it over like Runtime.
	// Nil: Start takes it itself, after the store was opened.
	Lock *Lock
	// TaskCommand is the argv of the local long-running task (normally
	// this binary with "task"); empty: runs never spill.
	TaskCommand []string
	// StepBudget bounds one Step (default 60s).
	StepBudget time.Duration
	// AllowRemote lets Addr be other than a loopback address. The API is
	// then reachable by anyone who can reach the address, over plain
	// HTTP, guarded only by the bearer token: without it, Start refuses.
	AllowRemote bool
	// HTTP bounds the API's connections (zero fields: the defaults of
	// HTTPLimits).
	HTTP HTTPLimits
	// SweepInterval is how often the sweeper compares runs with their
	// executions after the sweep at start (default Runtime.Config's
	// SweepInterval, 5m).
	SweepInterval time.Duration
	// MaxInvocations bounds the Lambda handlers (Step, Approval,
	// Finalize) running at once, the oldest execution's first (default
	// DefaultMaxInvocations; states.Config.MaxInvocations).
	MaxInvocations int
	Logger         *slog.Logger
}

// DefaultMaxInvocations is Config.MaxInvocations' default: enough handlers
// at once to fill the store's group commit, few enough that a run resumed
// by its approval does not queue behind a burst of new runs. Measured on
// bench/load N=1000, 2 shared cores, alternating: 8 and 16 made the group
// transactions small (0.44 fsyncs per step commit at 8) and cost CPU per
// run; 64 kept unbounded's throughput with half its p99 approval →
// completed; 32 had a lower p99 still, at a third less throughput.
const DefaultMaxInvocations = 64

// HTTPLimits are the API server's timeouts and connection cap. Event
// streams (SSE) are exempt from WriteTimeout: they clear their write
// deadline and are bounded by their own maximum duration instead.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration // default 10s
	ReadTimeout       time.Duration // whole request, body included; default 1m
	WriteTimeout      time.Duration // default 1m
	IdleTimeout       time.Duration // an idle keep-alive connection is closed; default 2m
	// MaxConns caps the open connections: more wait in the kernel's
	// accept queue until one closes (default 1024).
	MaxConns int
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.ReadTimeout, time.Minute)
	def(&l.WriteTimeout, time.Minute)
	def(&l.IdleTimeout, 2*time.Minute)
	if l.MaxConns <= 0 {
		l.MaxConns = 1024
	}
	return l
}

// withDefaults fills cfg's defaults and refuses what Start cannot serve:
// an address other than loopback without AllowRemote (allowed, it is
// logged), or no Runtime.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = ".keel"
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.Principal == "" {
		cfg.Principal = "dev"
	}
	if cfg.StepBudget <= 0 {
		cfg.StepBudget = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckAddr(cfg.Addr, cfg.AllowRemote); err != nil {
		return cfg, err
	} else if !isLoopback(cfg.Addr) {
		cfg.Logger.Warn("keel dev is serving on a non-loopback address: anyone who reaches it over plain HTTP can try the bearer token", "addr", cfg.Addr)
	}
	if cfg.Runtime == nil {
		return cfg, errors.New("devserver: no runtime")
	}
	return cfg, nil
}
