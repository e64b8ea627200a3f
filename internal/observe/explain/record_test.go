package explain_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

var update = flag.Bool("update", false, "re-record testdata/*.json from runs of the real harness")

// clock ticks 5ms at every reading, so that events are ordered in time
// and spans have a length; tools advance it to stand for their work.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(5 * time.Millisecond)
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// world is a real harness on a real SQLite store.
type world struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock
	store *sqlite.Store
}

func newWorld(t *testing.T) *world {
	clk := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &world{t: t, ctx: context.Background(), clk: clk, store: st}
}

// readonly is a read-only tool: work runs as its body.
type readonly struct {
	name string
	work func(c tool.Call) (tool.Result, error)
}

func (r readonly) Info() tool.Info {
	return tool.Info{Name: r.name, Mode: run.ModeSafeReadonly, Description: r.name,
		Schema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)}
}
func (r readonly) Run(_ context.Context, c tool.Call) (tool.Result, error) { return r.work(c) }

// publish is a mutating effect whose destination promises nothing and
// whose dispatch never answers: the run must end needs_human.
type publish struct{}

func (publish) Info() tool.Info {
	return tool.Info{Name: "publish", Mode: run.ModeMutating, Description: "publish",
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
}
func (publish) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("effectful")
}
func (publish) Name() string           { return "blog" }
func (publish) Contract() ops.Contract { return ops.Contract{} }
func (publish) Intent(context.Context, tool.Call) (tool.Intent, error) {
	return tool.Intent{ArtifactHash: run.HashBytes([]byte("post"))}, nil
}
func (publish) Dispatch(context.Context, run.Operation) (ops.Outcome, error) {
	return ops.Outcome{}, errors.New("POST https://blog.example/posts: context deadline exceeded")
}
func (publish) Lookup(context.Context, run.Operation) (ops.Outcome, bool, error) {
	return ops.Outcome{}, false, errors.New("no lookup")
}
func (publish) Describe(op run.Operation) tool.Result { return tool.Result{Content: "published"} }

// record runs one agent with a scripted model through the harness until
// it stops (or until stop says so) and returns its collected records.
func (w *world) record(script string, tools []tool.Tool, limits run.Limits, stop func(harness.Decision, string) bool) telemetry.Bundle {
	w.t.Helper()
	sm, err := scripted.Parse([]byte(script))
	if err != nil {
		w.t.Fatal(err)
	}
	m := model.NewTransport(sm, model.TransportOptions{Sleep: func(context.Context, time.Duration) error { return nil },
		Prices: model.PriceTable{"scripted": {Input: 3_000_000, Output: 15_000_000}}})
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		w.t.Fatal(err)
	}
	h, err := harness.New(harness.Options{Store: w.store, Agents: harness.AgentMap{"builder": {Name: "builder", Model: m, Tools: reg}},
		Owner: "test-worker", Clock: w.clk.Now})
	if err != nil {
		w.t.Fatal(err)
	}
	if limits == (run.Limits{}) {
		limits = run.Limits{}.WithDefaults()
	}
	r, _, err := w.store.CreateRun(w.ctx, run.Run{ID: run.NewID("run"), SessionID: "s1", Owner: "alice", Agent: "builder",
		Request: "make the tests pass", InputPolicy: run.InputQueue, Limits: limits})
	if err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		d, err := h.Step(w.ctx, r.ID, time.Minute)
		if err != nil {
			w.t.Fatalf("step %d: %v", i, err)
		}
		if stop != nil && stop(d, r.ID) {
			break
		}
		if d.Next == harness.NextApproval && stop != nil {
			continue // stop decided it
		}
		if d.Next != harness.NextContinue && d.Next != harness.NextWait {
			if _, err := h.Finalize(w.ctx, r.ID, d.Error); err != nil {
				w.t.Fatal(err)
			}
			break
		}
		w.clk.Advance(time.Duration(d.WaitSeconds) * time.Second)
	}
	b, err := telemetry.Collect(w.ctx, w.store, r.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

func failingTests(w *world) tool.Tool {
	return readonly{name: "run_tests", work: func(tool.Call) (tool.Result, error) {
		w.clk.Advance(3 * time.Second)
		return tool.Result{}, errors.New("exit status 1: npm install failed: ERESOLVE could not resolve")
	}}
}

func search(w *world) tool.Tool {
	return readonly{name: "search", work: func(tool.Call) (tool.Result, error) {
		w.clk.Advance(200 * time.Millisecond)
		return tool.Result{Content: "3 results"}, nil
	}}
}

const usage = `"usage":{"input_tokens":1000,"output_tokens":200}`

// kinds are the recorded runs: one of each way a run ends or waits.
var kinds = map[string]func(w *world) telemetry.Bundle{
	"completed": func(w *world) telemetry.Bundle {
		return w.record(`{"turns":[
			{"tool_calls":[{"name":"search","args":{"target":"flaky test"}}],"usage":{"input_tokens":300,"output_tokens":50}},
			{"text":"The flaky test is fixed.","usage":{"input_tokens":400,"output_tokens":80}}]}`,
			[]tool.Tool{search(w)}, run.Limits{}, nil)
	},
	"budget_exceeded": func(w *world) telemetry.Bundle {
		return w.record(`{"turns":[
			{"tool_calls":[{"name":"search","args":{"target":"error"}}],"usage":{"input_tokens":100,"output_tokens":20}},
			{"tool_calls":[{"name":"run_tests","args":{"target":"./..."}}],`+usage+`,"repeat":10}]}`,
			[]tool.Tool{search(w), failingTests(w)}, run.Limits{MaxToolCalls: 4}.WithDefaults(), nil)
	},
	"tool_failing": func(w *world) telemetry.Bundle {
		return w.record(`{"turns":[
			{"tool_calls":[{"name":"run_tests","args":{"target":"./..."}}],`+usage+`,"repeat":3},
			{"text":"I could not make the tests pass: npm install fails.","usage":{"input_tokens":900,"output_tokens":40}}]}`,
			[]tool.Tool{failingTests(w)}, run.Limits{}, nil)
	},
	"needs_human": func(w *world) telemetry.Bundle {
		return w.record(`{"turns":[
			{"tool_calls":[{"name":"publish","args":{"text":"release notes"}}],"usage":{"input_tokens":500,"output_tokens":60}},
			{"text":"published"}]}`,
			[]tool.Tool{publish{}}, run.Limits{}, func(d harness.Decision, id string) bool {
				if d.Next == harness.NextApproval {
					ap, err := w.store.GetApproval(w.ctx, id, d.ApprovalID)
					if err != nil {
						w.t.Fatal(err)
					}
					if _, err := w.store.DecideApproval(w.ctx, store.Decision{RunID: id, ApprovalID: ap.ID, Approve: true, ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
						w.t.Fatal(err)
					}
				}
				return false
			})
	},
	"rate_limited": func(w *world) telemetry.Bundle {
		// Recorded during its durable wait: the provider asked for 90s.
		return w.record(`{"turns":[
			{"tool_calls":[{"name":"search","args":{"target":"x"}}],"usage":{"input_tokens":100,"output_tokens":20}},
			{"text":"done","faults":[{"kind":"status_429","attempts":9,"retry_after_seconds":90}]}]}`,
			[]tool.Tool{search(w)}, run.Limits{}, func(d harness.Decision, _ string) bool { return d.Next == harness.NextWait })
	},
	"cancelled": func(w *world) telemetry.Bundle {
		cancelling := readonly{name: "long_build", work: func(c tool.Call) (tool.Result, error) {
			w.clk.Advance(40 * time.Second)
			if _, _, err := w.store.RequestCancel(w.ctx, c.RunID, "carol"); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Content: "built"}, nil
		}}
		return w.record(`{"turns":[
			{"tool_calls":[{"name":"long_build","args":{"target":"all"}}],`+usage+`,"repeat":5}]}`,
			[]tool.Tool{cancelling}, run.Limits{}, nil)
	},
}

// recorded returns the fixture of kind: recorded now by the real harness,
// and written to testdata with -update.
func recorded(t *testing.T, kind string) (fresh, stored telemetry.Bundle) {
	t.Helper()
	fresh = kinds[kind](newWorld(t))
	path := filepath.Join("testdata", kind+".json")
	if *update {
		data, err := json.MarshalIndent(fresh, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (record it with go test ./internal/observe/explain -update)", err)
	}
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	return fresh, stored
}
