package harness_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store/sqlite"
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
		rc := &readCounter{Store: e.store}
		h := e.harness(rc, e.agent("a", script, ec), func(o *harness.Options) { o.CacheRuns = cacheRuns })
		r := e.createRun("a", "s1", nil)
		for i := 0; ; i++ {
			// A budget of a few clock ticks: a Step runs an iteration or
			// two and returns continue.
			d, err := h.Step(e.ctx, r.ID, 5*time.Millisecond)
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
				if _, err := e.store.AppendEvents(e.ctx, r.ID, []run.Event{{Type: run.EventInputReceived}}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Step(e.ctx, r.ID, 5*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				if rc.checkpoints.Load() == before {
					t.Fatal("the Step after another writer's event used the cache")
				}
			}
		}
		got, err := e.store.GetRun(e.ctx, r.ID)
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
