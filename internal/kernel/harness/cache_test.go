package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
)

// readCounter counts the reads a Step makes to rebuild a run.
type readCounter struct {
	*sqlite.Store
	checkpoints, items atomic.Int64
}

func (r *readCounter) ListCheckpoints(ctx context.Context, runID string, after int64, limit int) ([]run.Checkpoint, error) {
	r.checkpoints.Add(1)
	return r.Store.ListCheckpoints(ctx, runID, after, limit)
}

func (r *readCounter) ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error) {
	r.items.Add(1)
	return r.Store.ListPlanItems(ctx, runID)
}

// A run stepped many times by one worker rebuilds its transcript from the
// store once; a write by anyone else in between makes the next Step read
// the store again; and the run ends exactly as without the cache.
func TestRunCacheSkipsRebuildUntilTheLogMoves(t *testing.T) {
	const n = 12
	script := fmt.Sprintf(`{"turns":[{"repeat":%d,"tool_calls":[{"name":"echo","args":{"text":"hello"}}]}],"final":"done"}`, n)
	result := func(cacheRuns int, poke bool) (reads int64, out string, tools int64, steps int64) {
		e := newEnv(t)
		ec := &echo{}
		rc := &readCounter{Store: e.Store}
		h := e.Harness(rc, e.Agent("a", script, ec), func(o *harness.Options) { o.CacheRuns = cacheRuns })
		r := e.CreateRun("a", "s1", nil)
		for i := 0; ; i++ {
			// A budget of a few clock ticks: a Step runs an iteration or
			// two and returns continue.
			d, err := h.Step(e.Ctx, r.ID, 5*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if d.Next == harness.NextDone {
				break
			}
			if d.Next != harness.NextContinue || i > 10*n {
				t.Fatalf("step %d: %+v", i, d)
			}
			if i == 2 && poke {
				before := rc.checkpoints.Load()
				// Another writer appends to the run's log.
				if _, err := e.Store.AppendEvents(e.Ctx, r.ID, []run.Event{{Type: run.EventInputReceived}}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Step(e.Ctx, r.ID, 5*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				if rc.checkpoints.Load() == before {
					t.Fatal("the Step after another writer's event used the cache")
				}
			}
		}
		got, err := e.Store.GetRun(e.Ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return rc.checkpoints.Load() + rc.items.Load(), got.Output, ec.calls.Load(), got.StepCount
	}
	coldReads, coldOut, coldTools, coldSteps := result(-1, false)
	warmReads, warmOut, warmTools, warmSteps := result(0, false)
	_, pokedOut, pokedTools, pokedSteps := result(0, true)
	if warmOut != coldOut || warmTools != coldTools || warmSteps != coldSteps || pokedOut != coldOut || pokedTools != coldTools || pokedSteps != coldSteps {
		t.Fatalf("with the cache: %q %d tools %d steps (poked: %q %d %d); without: %q %d %d",
			warmOut, warmTools, warmSteps, pokedOut, pokedTools, pokedSteps, coldOut, coldTools, coldSteps)
	}
	if coldTools != n {
		t.Fatalf("tool ran %d times, want %d", coldTools, n)
	}
	// One rebuild (the first Step) with the cache; one per Step without.
	if warmReads > 2 || coldReads <= warmReads {
		t.Fatalf("rebuild reads: %d with the cache, %d without", warmReads, coldReads)
	}
}

// windowRecorder keeps what each model call was sent.
type windowRecorder struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []string
	last  model.Request
}

func (r *windowRecorder) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	b, err := json.Marshal(struct {
		Messages                  []model.Message
		Omitted, OmittedAssistant int
	}{req.Messages, req.Omitted, req.OmittedAssistant})
	if err != nil {
		return model.Response{}, err
	}
	r.mu.Lock()
	r.reqs, r.last = append(r.reqs, string(b)), req
	r.mu.Unlock()
	return r.inner.Generate(ctx, req)
}

// A long run under a small context window: every model call is sent the
// same window whether the worker kept the run between Steps (warm) or read
// it back from the store at each Step (cold, as after a restart); the
// worker's cache entry stays the window's size however long the run gets;
// and the store still holds the whole transcript.
func TestRunCacheHoldsTheWindowOnly(t *testing.T) {
	const n = 150
	script := fmt.Sprintf(`{"turns":[{"repeat":%d,"tool_calls":[{"name":"echo","args":{"text":"hello"}}]}],"final":"done"}`, n)
	type outcome struct {
		reqs      []string
		maxCached int
		lastWin   int
		omitted   int
		output    string
		stored    int
	}
	result := func(cacheRuns int) outcome {
		e := newEnv(t)
		ec := &echo{}
		agents := e.Agent("a", script, ec)
		a := agents["a"]
		rec := &windowRecorder{inner: a.Model}
		// 150 tokens less 100 for the answer: 200 characters, a few
		// iterations of echo.
		a.Model, a.ContextTokens = rec, 150
		agents["a"] = a
		h := e.Harness(nil, agents, func(o *harness.Options) { o.CacheRuns = cacheRuns })
		r := e.CreateRun("a", "s1", func(r *run.Run) { r.Limits.MaxSteps, r.Limits.MaxToolCalls = 2*n, 2*n })
		out := outcome{maxCached: -1}
		for i := 0; ; i++ {
			d, err := h.Step(e.Ctx, r.ID, 5*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			out.maxCached = max(out.maxCached, harness.CachedMessages(h, r.ID))
			if d.Next == harness.NextDone {
				break
			}
			if d.Next != harness.NextContinue || i > 10*n {
				t.Fatalf("step %d: %+v", i, d)
			}
		}
		if ec.calls.Load() != n {
			t.Fatalf("echo ran %d times, want %d", ec.calls.Load(), n)
		}
		out.reqs, out.lastWin, out.omitted = rec.reqs, len(rec.last.Messages), rec.last.Omitted
		out.output = e.GetRun(r.ID).Output
		cps, err := e.Store.ListCheckpoints(e.Ctx, r.ID, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range cps {
			var st struct{ Messages []model.Message }
			if err := json.Unmarshal(cp.State, &st); err != nil {
				t.Fatal(err)
			}
			out.stored += len(st.Messages)
		}
		return out
	}
	warm, cold := result(0), result(-1)
	if len(warm.reqs) != n+1 || len(cold.reqs) != n+1 {
		t.Fatalf("%d model calls warm, %d cold, want %d", len(warm.reqs), len(cold.reqs), n+1)
	}
	for i := range warm.reqs {
		if warm.reqs[i] != cold.reqs[i] {
			t.Fatalf("call %d: warm sent\n%s\ncold sent\n%s", i, warm.reqs[i], cold.reqs[i])
		}
	}
	if warm.output != "done" || cold.output != "done" {
		t.Fatalf("output %q warm, %q cold", warm.output, cold.output)
	}
	// The last call's window: the task and a few iterations; the
	// cache held at most about twice that (trims are amortized).
	if warm.omitted < 2*n-20 || warm.lastWin > 20 {
		t.Fatalf("the last call was sent %d messages, %d left out: the window did not hold", warm.lastWin, warm.omitted)
	}
	if warm.maxCached < 1 || warm.maxCached > 2*warm.lastWin+2 {
		t.Fatalf("the cache held up to %d messages for a window of %d", warm.maxCached, warm.lastWin)
	}
	if cold.maxCached != -1 {
		t.Fatalf("CacheRuns -1 kept an entry of %d messages", cold.maxCached)
	}
	// The store keeps the whole transcript: the task, n calls and their
	// results, the final answer.
	if want := 2*n + 2; warm.stored != want || cold.stored != want {
		t.Fatalf("the store holds %d messages warm, %d cold, want %d", warm.stored, cold.stored, want)
	}
}
