package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/local/devserver"
)

// Config is one long run.
type Config struct {
	N          int           // iterations: model call → tool call → checkpoint
	StepBudget time.Duration // one Step's budget: small, so that the run takes many Steps and rolls over
	Dir        string
	Marks      []int // iterations at which to report
	Window     int   // iterations each mark's time per iteration is averaged over
	// HeapProfile, when set, is a path prefix: a heap profile is written
	// to HeapProfile-{iteration}.pb.gz at each mark (go tool pprof
	// -inuse_space), after a GC, so that it shows what is live.
	HeapProfile string
	// ContextTokens is the agent's context window (harness.Agent
	// ContextTokens): what the harness keeps of the transcript between
	// model calls is bounded by it.
	ContextTokens int
	// RefN > 0 runs the reference after the long run: RefN iterations in
	// one Step (see Reference).
	RefN int
}

// Mark is what was measured when the run reached an iteration count.
type Mark struct {
	Iteration int     `json:"iteration"`
	MsPerIter float64 `json:"ms_per_iteration"` // over the Window iterations before it
	// DecadeMsPerIter is the time per iteration since the previous mark
	// (from 0 for the first).
	DecadeMsPerIter float64 `json:"decade_ms_per_iteration"`
	// ModelMsPerIter is the part spent in the (scripted) model's call;
	// KeelMsPerIter the rest.
	ModelMsPerIter float64 `json:"model_ms_per_iteration"`
	KeelMsPerIter  float64 `json:"keel_ms_per_iteration"`
	RSSMB          float64 `json:"rss_mb"`
	HeapMB         float64 `json:"heap_in_use_mb"`
	// LiveMB is the heap in use right after a forced GC: what is live,
	// without the garbage HeapMB may still hold.
	LiveMB float64 `json:"live_heap_mb"`
	// GoMB is what the Go runtime holds from the OS (Sys less released):
	// RSS beyond it is memory Go does not manage: the binary's mapped
	// code and SQLite's page caches (modernc's C heap).
	GoMB         float64 `json:"go_runtime_mb"`
	ElapsedSecs  float64 `json:"elapsed_seconds"`
	Transcript   int     `json:"transcript_messages"`
	BytesPerIter float64 `json:"store_bytes_per_iteration"`
}

// Result is a long run's outcome.
type Result struct {
	N           int            `json:"n"`
	Status      run.Status     `json:"status"`
	Seconds     float64        `json:"seconds"`
	Marks       []Mark         `json:"marks"`
	Generations int            `json:"generations"`
	MaxHistory  int            `json:"max_history_events_per_generation"`
	History     map[string]int `json:"history_events"`
	Steps       int64          `json:"steps"`
	// ContextTokens is the agent's context window the run had.
	ContextTokens int `json:"context_tokens"`
	// Reference is the same loop in one Step, measured right after.
	Reference *Reference `json:"reference,omitempty"`
}

const agentName = "loop"

// timedModel adds up the time spent in the model: the scripted model reads
// the whole transcript at each call (to pick its turn and count input
// tokens), as a real model reads its prompt, so its share grows with the
// run; the rest of an iteration is Keel's.
type timedModel struct {
	inner model.Model
	nanos *atomic.Int64
}

func (t timedModel) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	start := time.Now()
	resp, err := t.inner.Generate(ctx, req)
	t.nanos.Add(int64(time.Since(start)))
	return resp, err
}

// counters are what an agent's calls add up.
type counters struct{ calls, modelNanos atomic.Int64 }

// loopAgent is one agent: the scripted model asks for echo n times, then
// answers.
func loopAgent(name string, n, contextTokens int, c *counters) (compose.AgentDef, error) {
	script := fmt.Sprintf(`{"turns":[{"repeat":%d,"tool_calls":[{"name":"echo","args":{"text":"hello"}}],"usage":{"input_tokens":20,"output_tokens":10}}],"final":"done"}`, n)
	m, err := scripted.Parse([]byte(script))
	if err != nil {
		return compose.AgentDef{}, err
	}
	calls, modelNanos := &c.calls, &c.modelNanos
	return compose.AgentDef{
		Name: name, System: "Call echo until told otherwise.",
		Model: compose.ModelChoice{Model: timedModel{inner: model.Direct(m), nanos: modelNanos}},
		Tools: func(env compose.ToolEnv) ([]tool.Tool, error) {
			b, err := agentdef.Func("echo", "Echo the text.", run.ModeSafeReadonly, func(_ context.Context, a struct {
				Text string `json:"text"`
			}) (struct {
				Text string `json:"text"`
			}, error) {
				calls.Add(1)
				return struct {
					Text string `json:"text"`
				}{a.Text}, nil
			})
			if err != nil {
				return nil, err
			}
			return []tool.Tool{b(env.Artifacts)}, nil
		},
		MaxTokens: 100, ContextTokens: contextTokens,
	}, nil
}

// Run starts keel dev in this process, creates one run of cfg.N
// iterations through the API and samples it until it ends.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.N < 1 {
		return Result{}, errors.New("-n: want at least 1 iteration")
	}
	var long, refC counters
	a, err := loopApp(cfg, &long, &refC)
	if err != nil {
		return Result{}, err
	}
	dbPath := filepath.Join(cfg.Dir, "keel.db")
	rt, srv, err := startServer(ctx, cfg, a, dbPath)
	if err != nil {
		return Result{}, err
	}
	defer srv.Close()
	c, err := client.New(srv.URL, srv.Token, nil)
	if err != nil {
		return Result{}, err
	}
	big := int64(1) << 60
	start := time.Now()
	r, _, err := c.CreateRun(ctx, api.CreateRunRequest{Agent: agentName, Input: "loop",
		Limits: &api.LimitsRequest{MaxSteps: big, MaxToolCalls: big, MaxTokens: big}}, "")
	if err != nil {
		return Result{}, err
	}

	smp := newSampler(cfg, start, dbPath, &long)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go smp.run(stop, sampled)
	final, err := waitEnd(ctx, c, r.RunID)
	if err != nil {
		close(stop)
		return Result{}, err
	}
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	if smp.profErr != nil {
		return Result{}, fmt.Errorf("heap profile: %w", smp.profErr)
	}
	res := Result{N: cfg.N, Status: final.Status, Seconds: elapsed.Seconds(), Marks: smp.marks, Steps: final.Counters.Steps, ContextTokens: cfg.ContextTokens}
	if cfg.RefN > 0 && final.Status == run.StatusCompleted {
		ref, err := reference(ctx, rt, cfg.RefN, &refC)
		if err != nil {
			return Result{}, err
		}
		res.Reference = &ref
	}
	if res.History, err = history(ctx, rt.SQLite.DB()); err != nil {
		return Result{}, err
	}
	res.Generations = len(res.History)
	for _, n := range res.History {
		res.MaxHistory = max(res.MaxHistory, n)
	}
	if got := long.calls.Load(); final.Status == run.StatusCompleted && got != int64(cfg.N) {
		return res, fmt.Errorf("the tool ran %d times, want %d", got, cfg.N)
	}
	return res, nil
}

// loopApp is the app of the long agent (cfg.N iterations, counted in
// long) and of the reference agent (cfg.RefN, at least 1, counted in ref).
func loopApp(cfg Config, long, ref *counters) (compose.App, error) {
	var a compose.App
	for _, ag := range []struct {
		name string
		n    int
		c    *counters
	}{{agentName, cfg.N, long}, {refAgentName, max(cfg.RefN, 1), ref}} {
		def, err := loopAgent(ag.name, ag.n, cfg.ContextTokens, ag.c)
		if err != nil {
			return compose.App{}, err
		}
		a.Agents = append(a.Agents, def)
	}
	return a, nil
}

// startServer opens app a on a SQLite store at dbPath and fs artifacts in
// cfg.Dir, and starts keel dev's server on it.
func startServer(ctx context.Context, cfg Config, a compose.App, dbPath string) (*compose.Runtime, *devserver.Server, error) {
	kc, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return nil, nil, err
	}
	kc.DataDir, kc.Addr, kc.StepBudget = cfg.Dir, "127.0.0.1:0", cfg.StepBudget
	kc.Store = "sqlite:" + dbPath
	kc.Artifacts = "fs:" + filepath.Join(cfg.Dir, "artifacts")
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, nil, err
	}
	b, err := compose.LoadBackends(ctx, kc, nil)
	if err != nil {
		return nil, nil, err
	}
	rt, err := compose.Open(ctx, kc, a, b)
	if err != nil {
		return nil, nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: cfg.Dir, Addr: kc.Addr, Runtime: rt, StepBudget: kc.StepBudget})
	if err != nil {
		return nil, nil, err
	}
	return rt, srv, nil
}

// waitEnd polls the run until it is final or needs a person.
func waitEnd(ctx context.Context, c *client.Client, runID string) (api.Run, error) {
	for {
		final, err := c.GetRun(ctx, runID)
		if err != nil {
			return api.Run{}, err
		}
		if final.Status.Terminal() || final.Status == run.StatusNeedsHuman {
			return final, nil
		}
		select {
		case <-ctx.Done():
			return api.Run{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// history counts the Step Functions history events of each execution
// (generation) of the run.
func history(ctx context.Context, db *sql.DB) (map[string]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT e.name, COUNT(*) FROM sfn_history h JOIN sfn_executions e ON e.arn = h.execution_arn GROUP BY e.name`)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

// memory is this process's resident set and Go heap in use, in MB.
func memory() (rss, heap float64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap = float64(ms.HeapInuse) / (1 << 20)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, heap
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			rss = kb / 1024
		}
	}
	return rss, heap
}

// liveHeap is the Go heap in use after a collection and what the Go
// runtime holds from the OS, in MB.
func liveHeap() (live, held float64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20), float64(ms.Sys-ms.HeapReleased) / (1 << 20)
}

func heapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func dbSize(path string) (int64, error) {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}
