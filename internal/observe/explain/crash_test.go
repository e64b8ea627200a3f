package explain_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// TestExplainCrashMidCommand: a worker dies in the middle of a command
// (its goroutine ends there, committing nothing, as a SIGKILLed process
// would), and after its lease expired another worker runs the step again.
// The log holds no event of the dead worker; the story still says a worker
// stopped mid-step and the next one started again from the checkpoint.
func TestExplainCrashMidCommand(t *testing.T) {
	w := newWorld(t)
	sm, err := scripted.Parse([]byte(`{"turns":[{"tool_calls":[{"name":"build","args":{"target":"all"}}]},{"text":"built"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewTransport(sm, model.TransportOptions{Sleep: func(context.Context, time.Duration) error { return nil }})
	var calls atomic.Int32
	reg, err := tool.NewRegistry(readonly{name: "build", work: func(tool.Call) (tool.Result, error) {
		if calls.Add(1) == 1 {
			runtime.Goexit() // the worker dies mid-command
		}
		return tool.Result{Content: "built"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	worker := func(owner string) *harness.Harness {
		h, err := harness.New(harness.Options{Store: w.store, Agents: harness.AgentMap{"builder": {Name: "builder", Model: m, Tools: reg}},
			Owner: owner, Clock: w.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	r, _, err := w.store.CreateRun(w.ctx, run.Run{ID: run.NewID("run"), SessionID: "s1", Owner: "alice", Agent: "builder",
		Request: "build it", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	died := make(chan struct{})
	go func() {
		defer close(died)
		_, _ = worker("worker-1").Step(w.ctx, r.ID, time.Minute)
	}()
	<-died
	w.clk.Advance(time.Hour) // worker-1's lease expires
	if d, err := worker("worker-2").Step(w.ctx, r.ID, time.Minute); err != nil || d.Next != harness.NextDone {
		t.Fatalf("worker-2: %+v %v", d, err)
	}
	b, err := telemetry.Collect(w.ctx, w.store, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	s := explain.Of(b)
	if !strings.Contains(s.Text, "a worker stopped mid-step without recording anything") ||
		!strings.Contains(s.Text, "the next worker (worker-2) started again from the last checkpoint") {
		t.Errorf("the story does not tell the crash:\n%s", s.Text)
	}
}
