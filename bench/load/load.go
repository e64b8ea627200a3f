package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/keelrun/keel/examples/research"
	"github.com/keelrun/keel/examples/research/researchtest"
	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/artifact/fs"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devserver"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
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
	if cfg.N < 1 {
		return Result{}, errors.New("-n: want at least 1 run")
	}
	if cfg.MaxBatch < 0 {
		return Result{}, errors.New("-max-batch: want 0 (the store's default) or more")
	}
	if cfg.MaxInvocations < 0 {
		return Result{}, errors.New("-max-invocations: want 0 (keel dev's default) or more")
	}
	if cfg.Clients < 1 {
		cfg.Clients = 32
	}
	kc, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return Result{}, err
	}
	kc.DataDir, kc.Addr = cfg.Dir, "127.0.0.1:0"
	kc.Store = "sqlite:" + filepath.Join(cfg.Dir, "keel.db")
	kc.Artifacts = "fs:" + filepath.Join(cfg.Dir, "artifacts")
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return Result{}, err
	}
	b, err := compose.LoadBackends(ctx, kc, nil)
	if err != nil {
		return Result{}, err
	}
	if cfg.MaxBatch > 0 {
		b.SQLiteOptions.MaxBatch = cfg.MaxBatch
	}
	if cfg.NoGroup {
		b.SQLiteOptions.MaxBatch = 1
	}
	rt, err := compose.Open(ctx, kc, researchtest.App(research.DirPublisher{Dir: filepath.Join(cfg.Dir, "published")}), b)
	if err != nil {
		return Result{}, err
	}
	ts := &timedStore{Store: rt.Store}
	rt.Store = ts
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: cfg.Dir, Addr: kc.Addr, Runtime: rt, StepBudget: kc.StepBudget,
		HTTP: devserver.HTTPLimits{MaxConns: cfg.N + cfg.Clients + 64}, MaxInvocations: cfg.MaxInvocations})
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
	var artsBefore artfs.SyncStats
	if arts != nil {
		artsBefore = arts.Syncs()
	}

	cpu0 := cpuSeconds()
	start := time.Now()
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
				r, _, err := c.CreateRun(ctx, api.CreateRunRequest{Agent: research.AgentName, Input: "research " + strconv.Itoa(i)}, "load-"+strconv.Itoa(i))
				if err != nil {
					createErr <- fmt.Errorf("create run %d: %w", i, err)
					return
				}
				ids[i] = r.RunID
			}
		})
	}
	// The approver runs beside the creators: a run is approved as soon as
	// a sweep finds it asking.
	approveCtx, stopApprover := context.WithCancel(ctx)
	approverDone := make(chan error, 1)
	go func() { approverDone <- approve(approveCtx, c, cfg.Clients) }()
	createWG.Wait()
	createSecs := time.Since(start).Seconds()
	select {
	case err := <-createErr:
		stopApprover()
		return Result{}, err
	default:
	}
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
	// Latencies and the end from the runs' own event times: the server's
	// clock, the decision's commit to the completion's commit.
	var lat []time.Duration
	var last time.Time
	for _, id := range ids {
		granted, done, err := eventTimes(ctx, c, id)
		if err != nil {
			return Result{}, err
		}
		if done.After(last) {
			last = done
		}
		if !granted.IsZero() && !done.IsZero() {
			lat = append(lat, done.Sub(granted))
		}
	}
	elapsed := last.Sub(start)
	res.Seconds = elapsed.Seconds()
	res.RunsPerSecond = float64(res.Completed) / elapsed.Seconds()
	res.ApprovalP50Ms, res.ApprovalP99Ms = pct(lat, 0.50), pct(lat, 0.99)
	ts.mu.Lock()
	res.CommitP50Ms, res.CommitP99Ms = pct(ts.lat, 0.50), pct(ts.lat, 0.99)
	res.StepCommits, res.CommitFailures = int64(len(ts.lat)), ts.fail
	ts.mu.Unlock()
	st := rt.SQLite.WriteStats()
	res.Transactions, res.Writes = st.Transactions-before.Transactions, st.Writes-before.Writes
	res.WriterBusy = (st.Busy - before.Busy).Seconds() / elapsed.Seconds()
	res.WriterCommit = (st.Committing - before.Committing).Seconds() / elapsed.Seconds()
	if res.StepCommits > 0 {
		res.FsyncsPerStep = float64(res.Transactions) / float64(res.StepCommits)
	}
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

// loadHTTPClient keeps a connection per concurrent caller: with
// http.DefaultClient's two idle connections per host, the 32 creators and
// the approvers dialled a new TCP connection for most requests, and the
// dialling and accepting was CPU taken from the server under test.
func loadHTTPClient(cfg Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 2*cfg.Clients + 16
	t.MaxIdleConnsPerHost = t.MaxIdleConns
	return &http.Client{Transport: t}
}

// approve sweeps the runs awaiting approval and approves each one's
// pending approval, until ctx ends.
func approve(ctx context.Context, c *client.Client, workers int) error {
	done := map[string]bool{}
	for {
		var todo []string
		page := ""
		for {
			l, err := c.ListRuns(ctx, client.ListRunsOptions{Status: run.StatusAwaitingApproval, Limit: 1000, PageToken: page})
			if err != nil {
				return err
			}
			for _, r := range l.Runs {
				if !done[r.RunID] {
					todo = append(todo, r.RunID)
				}
			}
			if page = l.NextPageToken; page == "" {
				break
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(todo))
		work := make(chan string)
		for range min(workers, len(todo)) {
			wg.Go(func() {
				for id := range work {
					if err := approveRun(ctx, c, id); err != nil {
						errs <- err
					}
				}
			})
		}
		for _, id := range todo {
			work <- id
			done[id] = true
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func approveRun(ctx context.Context, c *client.Client, id string) error {
	aps, err := c.ListApprovals(ctx, id)
	if err != nil {
		return fmt.Errorf("run %s: approvals: %w", id, err)
	}
	for _, a := range aps {
		if a.Status != run.ApprovalPending {
			continue
		}
		if _, err := c.Decide(ctx, id, a.ApprovalID, api.DecisionRequest{Decision: api.DecisionApprove, ArgsHash: a.ArgsHash}); err != nil {
			return fmt.Errorf("run %s: approve: %w", id, err)
		}
	}
	return nil
}

// waitFinished polls until n runs are in a final status, and counts them.
// While runs are active it asks only whether any is (listing every
// finished run four times a second took a tenth of the server's CPU), and
// counts the final ones once none is left.
func waitFinished(ctx context.Context, c *client.Client, n int) (map[run.Status]int, error) {
	final := []run.Status{run.StatusCompleted, run.StatusFailed, run.StatusCancelled, run.StatusNeedsHuman}
	active := []run.Status{run.StatusCreated, run.StatusPlanned, run.StatusRunning, run.StatusAwaitingApproval}
	count := func(sts []run.Status, limit int) (map[run.Status]int, int, error) {
		counts := map[run.Status]int{}
		total := 0
		for _, st := range sts {
			page := ""
			for {
				l, err := c.ListRuns(ctx, client.ListRunsOptions{Status: st, Limit: limit, PageToken: page})
				if err != nil {
					return nil, 0, err
				}
				counts[st] += len(l.Runs)
				total += len(l.Runs)
				if page = l.NextPageToken; page == "" || limit == 1 {
					break
				}
			}
		}
		return counts, total, nil
	}
	for {
		// Whether any run is active needs one run of each list, not all:
		// listing the thousand active runs four times a second was the
		// load generator's largest cost to the server under test.
		_, busy, err := count(active, 1)
		if err != nil {
			return nil, err
		}
		if busy == 0 {
			// A run may have moved between two of the lists: the final
			// count decides.
			counts, total, err := count(final, 1000)
			if err != nil {
				return nil, err
			}
			if total >= n {
				return counts, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// eventTimes returns when a run's approval was granted and when it ended.
func eventTimes(ctx context.Context, c *client.Client, id string) (granted, done time.Time, err error) {
	var after int64
	for {
		p, err := c.Events(ctx, id, after, 1000)
		if err != nil {
			return granted, done, fmt.Errorf("run %s: events: %w", id, err)
		}
		for _, ev := range p.Events {
			switch ev.Type {
			case run.EventApprovalGranted:
				granted = ev.Time
			case run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman:
				done = ev.Time
			}
			after = ev.Seq
		}
		if len(p.Events) < 1000 {
			return granted, done, nil
		}
	}
}

func pct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s)-1) + 0.5)
	return float64(s[i].Microseconds()) / 1000
}

// peakRSSMB is this process's high-water resident set (VmHWM): the server
// and the load clients together.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// dirSize is the bytes of the files under dir, each file once: a small
// artifact's key is a hard link to its object (internal/artifact/fs), not
// a second copy.
func dirSize(dir string) (int64, error) {
	var n int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				if seen[st.Ino] {
					return nil
				}
				seen[st.Ino] = true
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
