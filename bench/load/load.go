package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/local/devserver"
)

// Config is one load run.
type Config struct {
	N       int    // research runs
	Clients int    // concurrent creators (the watchers are one per run)
	Dir     string // data directory (keel.db, artifacts, published)
	// NoGroup gives every write a transaction and fsync of its own (the
	// store before group commit): the "before" of the comparison.
	NoGroup bool
	// MaxBatch bounds the writes of one group transaction (0: the store's
	// default).
	MaxBatch int
	// MaxInvocations bounds the Lambda handlers running at once (0: keel
	// dev's default; see devserver.Config).
	MaxInvocations int
}

// Result is what a load run measured.
type Result struct {
	N             int     `json:"n"`
	Completed     int     `json:"completed"`
	Seconds       float64 `json:"seconds"`
	RunsPerSecond float64 `json:"runs_per_second"`
	CreateSeconds float64 `json:"create_seconds"`
	ApprovalP50Ms float64 `json:"approval_to_completed_p50_ms"`
	ApprovalP99Ms float64 `json:"approval_to_completed_p99_ms"`
	CommitP50Ms   float64 `json:"step_commit_p50_ms"`
	CommitP99Ms   float64 `json:"step_commit_p99_ms"`
	StepCommits   int64   `json:"step_commits"`
	Transactions  int64   `json:"transactions"`
	Writes        int64   `json:"writes"`
	FsyncsPerStep float64 `json:"fsyncs_per_step_commit"`
	// WriterBusy is the share of the wall time the store's one committer
	// spent running batches; WriterCommit the share spent in COMMIT.
	WriterBusy   float64 `json:"writer_busy"`
	WriterCommit float64 `json:"writer_commit"`
	// ArtifactFsyncsPerRun is the artifact store's file and directory
	// fsyncs per run (the report and the audit head), when it counts them.
	ArtifactFsyncsPerRun float64 `json:"artifact_fsyncs_per_run"`
	PeakRSSMB            float64 `json:"peak_rss_mb"`
	BytesPerRun          int64   `json:"bytes_per_run"`
	// CPUSeconds is the process's user+system time over the load: with
	// Seconds, how much of the machine's two cores it got.
	CPUSeconds     float64 `json:"cpu_seconds"`
	StatusCounts   map[run.Status]int
	CommitFailures int64 `json:"commit_failures"`
}

// syncCounter is the fs artifact store's fsync count.
type syncCounter interface{ Syncs() artfs.SyncStats }

// timedStore times the harness's commits: the step commit latency.
type timedStore struct {
	store.Store
	mu   sync.Mutex
	lat  []time.Duration
	fail int64
}

func (t *timedStore) Commit(ctx context.Context, c store.Commit) ([]int64, error) {
	start := time.Now()
	seqs, err := t.Store.Commit(ctx, c)
	d := time.Since(start)
	t.mu.Lock()
	if err != nil {
		t.fail++
	} else {
		t.lat = append(t.lat, d)
	}
	t.mu.Unlock()
	return seqs, err
}

// Run starts keel dev in this process on cfg.Dir, creates cfg.N research
// runs through its HTTP API, approves each as it asks, and waits for all to
// finish.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	rt, ts, srv, err := startServer(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	closed := false
	defer func() {
		if !closed {
			srv.Close()
		}
	}()
	c, err := client.New(srv.URL, srv.Token, loadHTTPClient(cfg))
	if err != nil {
		return Result{}, err
	}
	before := rt.SQLite.WriteStats()
	arts, _ := rt.Artifacts.(syncCounter)
	artsBefore := syncsOf(arts)

	cpu0 := cpuSeconds()
	start := time.Now()
	ids, waitCreated := startCreators(ctx, c, cfg)
	// The approver runs beside the creators: a run is approved as soon as
	// a sweep finds it asking.
	approveCtx, stopApprover := context.WithCancel(ctx)
	approverDone := make(chan error, 1)
	go func() { approverDone <- approve(approveCtx, c, cfg.Clients) }()
	if err := waitCreated(); err != nil {
		stopApprover()
		return Result{}, err
	}
	createSecs := time.Since(start).Seconds()
	counts, err := waitFinished(ctx, c, cfg.N)
	// The load's CPU ends here: reading every run's events back for the
	// latencies below is the report's work, not the load's.
	cpuLoad := cpuSeconds() - cpu0
	stopApprover()
	if aerr := <-approverDone; aerr != nil && !errors.Is(aerr, context.Canceled) {
		return Result{}, aerr
	}
	if err != nil {
		return Result{}, err
	}

	res := Result{N: cfg.N, CreateSeconds: createSecs, StatusCounts: counts, Completed: counts[run.StatusCompleted]}
	lat, last, err := approvalLatencies(ctx, c, ids)
	if err != nil {
		return Result{}, err
	}
	elapsed := last.Sub(start)
	res.Seconds = elapsed.Seconds()
	res.RunsPerSecond = float64(res.Completed) / elapsed.Seconds()
	res.ApprovalP50Ms, res.ApprovalP99Ms = pct(lat, 0.50), pct(lat, 0.99)
	res.setWrites(ts, before, rt.SQLite.WriteStats(), elapsed)
	if arts != nil {
		a := arts.Syncs()
		res.ArtifactFsyncsPerRun = float64(a.Files+a.Dirs-artsBefore.Files-artsBefore.Dirs) / float64(cfg.N)
	}
	res.PeakRSSMB = peakRSSMB()
	res.CPUSeconds = cpuLoad
	if _, err := rt.SQLite.DB().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return Result{}, err
	}
	closed = true
	if err := srv.Close(); err != nil {
		return Result{}, err
	}
	size, err := dirSize(cfg.Dir)
	if err != nil {
		return Result{}, err
	}
	res.BytesPerRun = size / int64(cfg.N)
	return res, nil
}

// syncsOf is the fsyncs arts counted so far, none when it does not count.
func syncsOf(arts syncCounter) artfs.SyncStats {
	if arts == nil {
		return artfs.SyncStats{}
	}
	return arts.Syncs()
}

// withDefaults refuses bounds out of range and fills in the default
// number of clients.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.N < 1 {
		return cfg, errors.New("-n: want at least 1 run")
	}
	if cfg.MaxBatch < 0 {
		return cfg, errors.New("-max-batch: want 0 (the store's default) or more")
	}
	if cfg.MaxInvocations < 0 {
		return cfg, errors.New("-max-invocations: want 0 (keel dev's default) or more")
	}
	if cfg.Clients < 1 {
		cfg.Clients = 32
	}
	return cfg, nil
}

// startServer opens the research app on a SQLite store and fs artifacts in
// cfg.Dir, its commits timed, and starts keel dev's server on it.
func startServer(ctx context.Context, cfg Config) (*compose.Runtime, *timedStore, *devserver.Server, error) {
	kc, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return nil, nil, nil, err
	}
	kc.DataDir, kc.Addr = cfg.Dir, "127.0.0.1:0"
	kc.Store = "sqlite:" + filepath.Join(cfg.Dir, "keel.db")
	kc.Artifacts = "fs:" + filepath.Join(cfg.Dir, "artifacts")
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	b, err := compose.LoadBackends(ctx, kc, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.MaxBatch > 0 {
		b.SQLiteOptions.MaxBatch = cfg.MaxBatch
	}
	if cfg.NoGroup {
		b.SQLiteOptions.MaxBatch = 1
	}
	rt, err := compose.Open(ctx, kc, fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(cfg.Dir, "published")}), b)
	if err != nil {
		return nil, nil, nil, err
	}
	ts := &timedStore{Store: rt.Store}
	rt.Store = ts
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: cfg.Dir, Addr: kc.Addr, Runtime: rt, StepBudget: kc.StepBudget,
		HTTP: devserver.HTTPLimits{MaxConns: cfg.N + cfg.Clients + 64}, MaxInvocations: cfg.MaxInvocations})
	if err != nil {
		return nil, nil, nil, err
	}
	return rt, ts, srv, nil
}

// startCreators creates cfg.N research runs from cfg.Clients goroutines
// and returns their ids (set as each is created) and a wait that returns
// once all are done, with the first creation's error if one failed.
func startCreators(ctx context.Context, c *client.Client, cfg Config) ([]string, func() error) {
	ids := make([]string, cfg.N)
	createErr := make(chan error, cfg.Clients)
	idx := make(chan int)
	go func() {
		defer close(idx)
		for i := range cfg.N {
			select {
			case idx <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var createWG sync.WaitGroup
	for range cfg.Clients {
		createWG.Go(func() {
			for i := range idx {
				r, _, err := c.CreateRun(ctx, api.CreateRunRequest{Agent: fixture.AgentName, Input: "research " + strconv.Itoa(i)}, "load-"+strconv.Itoa(i))
				if err != nil {
					createErr <- fmt.Errorf("create run %d: %w", i, err)
					return
				}
				ids[i] = r.RunID
			}
		})
	}
	return ids, func() error {
		createWG.Wait()
		select {
		case err := <-createErr:
			return err
		default:
			return nil
		}
	}
}

// approvalLatencies reads, from the runs' own event times (the server's
// clock), each run's time from the decision's commit to the completion's
// commit, and the last completion.
func approvalLatencies(ctx context.Context, c *client.Client, ids []string) ([]time.Duration, time.Time, error) {
	var lat []time.Duration
	var last time.Time
	for _, id := range ids {
		granted, done, err := eventTimes(ctx, c, id)
		if err != nil {
			return nil, time.Time{}, err
		}
		if done.After(last) {
			last = done
		}
		if !granted.IsZero() && !done.IsZero() {
			lat = append(lat, done.Sub(granted))
		}
	}
	return lat, last, nil
}

// setWrites fills in the step commit latencies ts timed and the store's
// writes between the stats before and st, over elapsed.
func (res *Result) setWrites(ts *timedStore, before, st sqlite.WriteStats, elapsed time.Duration) {
	ts.mu.Lock()
	res.CommitP50Ms, res.CommitP99Ms = pct(ts.lat, 0.50), pct(ts.lat, 0.99)
	res.StepCommits, res.CommitFailures = int64(len(ts.lat)), ts.fail
	ts.mu.Unlock()
	res.Transactions, res.Writes = st.Transactions-before.Transactions, st.Writes-before.Writes
	res.WriterBusy = (st.Busy - before.Busy).Seconds() / elapsed.Seconds()
	res.WriterCommit = (st.Committing - before.Committing).Seconds() / elapsed.Seconds()
	if res.StepCommits > 0 {
		res.FsyncsPerStep = float64(res.Transactions) / float64(res.StepCommits)
	}
}
