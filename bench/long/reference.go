package main

import (
	"context"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// refAgentName is the agent of the reference run.
const refAgentName = "loop-reference"

// Reference is the same loop run in one Step: the harness called directly
// on the same store in the same process, right after the long run, with
// no state machine, no rollover and no Step boundaries — the shape of
// internal/kernel/harness's BenchmarkStepVsFloor. The long run's time per
// iteration over this one is what the executor, the Step boundaries and
// the rollovers add, measured on the same machine at the same moment.
type Reference struct {
	N              int     `json:"n"`
	MsPerIter      float64 `json:"ms_per_iteration"`
	ModelMsPerIter float64 `json:"model_ms_per_iteration"`
}

func reference(ctx context.Context, rt *compose.Runtime, n int, c *counters) (Reference, error) {
	h, err := harness.New(harness.Options{Store: rt.Store, Artifacts: rt.Artifacts, Agents: rt.Agents, Owner: "bench-long-reference"})
	if err != nil {
		return Reference{}, err
	}
	lim := run.Limits{MaxSteps: int64(2 * n), MaxToolCalls: int64(2 * n), MaxTokens: 1 << 60}.WithDefaults()
	r, _, err := rt.Store.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "reference", Owner: "bench", Agent: refAgentName,
		Request: "loop", InputPolicy: run.InputQueue, Limits: lim})
	if err != nil {
		return Reference{}, fmt.Errorf("reference run: %w", err)
	}
	start := time.Now()
	d, err := h.Step(ctx, r.ID, time.Hour)
	elapsed := time.Since(start)
	if err != nil {
		return Reference{}, fmt.Errorf("reference run: %w", err)
	}
	if d.Next != harness.NextDone || c.calls.Load() != int64(n) {
		return Reference{}, fmt.Errorf("reference run: ended with %s after %d tool calls, want done after %d", d.Next, c.calls.Load(), n)
	}
	return Reference{N: n, MsPerIter: float64(elapsed.Microseconds()) / 1000 / float64(n),
		ModelMsPerIter: float64(c.modelNanos.Load()) / 1e6 / float64(n)}, nil
}
