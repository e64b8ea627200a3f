package explain_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/harness/harnesstest"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/explain"
)

// panicking is harnesstest's note whose first calls panic, as many as its
// counters say: Intent before anything is recorded, Dispatch after the
// ledger recorded the effect (a request that left), Lookup before it
// answers.
type panicking struct {
	harnesstest.Note
	intent, dispatch, lookup atomic.Int64
}

func (p *panicking) Intent(ctx context.Context, c tool.Call) (tool.Intent, error) {
	if p.intent.Add(-1) >= 0 {
		panic("intent exploded")
	}
	return p.Note.Intent(ctx, c)
}

func (p *panicking) Dispatch(ctx context.Context, op run.Operation) (ops.Outcome, error) {
	out, err := p.Note.Dispatch(ctx, op)
	if p.dispatch.Add(-1) >= 0 {
		p.pages()["page"]++ // a real runtime panic: assignment to entry in nil map
	}
	return out, err
}

// pages is the index this defective tool never made.
func (p *panicking) pages() map[string]int { return nil }

func (p *panicking) Lookup(ctx context.Context, op run.Operation) (ops.Outcome, bool, error) {
	if p.lookup.Add(-1) >= 0 {
		panic(fmt.Sprintf("lookup of %s exploded", op.ID))
	}
	return p.Note.Lookup(ctx, op)
}

// panicAt panics at one fault point of the harness: a defect of the
// worker itself, which no recovery around a tool call catches.
type panicAt string

func (p panicAt) Hit(name string) {
	if name == string(p) {
		panic("worker defect at " + name)
	}
}

// TestHarnessPanicStory: explain's story of real harness runs that
// panicked (the runs of package harness's TestReadonlyToolPanic,
// TestEffectPanic and TestFinalizeHandsOverAnOperationInFlight): the first
// error is the panic, not lint's earlier failure; the story says where its
// stack is; and it promises no reconciliation of an operation the run
// handed on.
func TestHarnessPanicStory(t *testing.T) {
	const noteCall = `[{"name":"note","args":{"text":"hello"}}]`
	cases := []struct {
		name                     string
		calls                    string // the second answer's tool calls
		intent, dispatch, lookup int64
		promises                 harnesstest.LedgerOptions
		escapes                  bool // a panic escapes the Step, then Finalize
		kind                     run.EventType
		msg                      string
	}{
		{name: "read-only tool", calls: `[{"name":"boom","args":{}}]`,
			kind: run.EventToolFailed, msg: "tool boom panicked: index out of range [3] with length 3"},
		{name: "read-only tool beside another call", calls: `[{"name":"boom","args":{}},{"name":"echo","args":{}}]`,
			kind: run.EventToolFailed, msg: "tool boom panicked: index out of range [3] with length 3"},
		{name: "intent", calls: noteCall, intent: 1, promises: harnesstest.LedgerOptions{Lookup: true},
			kind: run.EventToolFailed, msg: "tool note panicked: intent exploded"},
		{name: "dispatch, destination cannot be asked", calls: noteCall, dispatch: 1,
			kind: run.EventOpNeedsHuman, msg: "tool note panicked: assignment to entry in nil map"},
		{name: "dispatch, destination has a lookup", calls: noteCall, dispatch: 1, promises: harnesstest.LedgerOptions{Lookup: true},
			kind: run.EventOpUncertain, msg: "tool note panicked: assignment to entry in nil map"},
		{name: "dispatch and then lookup", calls: noteCall, dispatch: 1, lookup: 1, promises: harnesstest.LedgerOptions{Lookup: true},
			kind: run.EventOpUncertain, msg: "tool note panicked: assignment to entry in nil map"},
		{name: "escaped the step", calls: noteCall, promises: harnesstest.LedgerOptions{Lookup: true}, escapes: true,
			kind: run.EventOpNeedsHuman, msg: "handler panic: worker defect at after_intent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := harnesstest.NewEnv(t)
			eff := &panicking{Note: harnesstest.Note{Mode: run.ModeConfirmOnce, To: harnesstest.NewLedger("wiki", tc.promises)}}
			eff.intent.Store(tc.intent)
			eff.dispatch.Store(tc.dispatch)
			eff.lookup.Store(tc.lookup)
			lint := readonly{name: "lint", work: func(tool.Call) (tool.Result, error) { return tool.Result{}, errors.New("exit status 1") }}
			boom := readonly{name: "boom", work: func(tool.Call) (tool.Result, error) { panic("index out of range [3] with length 3") }}
			echo := readonly{name: "echo", work: func(tool.Call) (tool.Result, error) { return tool.Result{Content: "hi"}, nil }}
			script := `{"turns":[{"tool_calls":[{"name":"lint","args":{}}]},{"tool_calls":` + tc.calls + `}],"final":"done"}`
			agents := e.Agent("a", script, lint, boom, echo, eff)
			r := e.CreateRun("a", "s1", nil)
			playPanic(t, e, agents, r.ID, tc.calls == noteCall, tc.escapes)

			s, err := explain.Explain(e.Ctx, e.Store, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if f := s.FirstErr; f == nil || !f.Panic || f.Kind != string(tc.kind) || !strings.Contains(f.Message, tc.msg) {
				t.Fatalf("first error %+v, want the panic %q in %s\n%s", s.FirstErr, tc.msg, tc.kind, s.Text)
			}
			if !strings.Contains(s.Text, "a panic: its stack is in the worker's log") {
				t.Errorf("the story does not say where the stack is:\n%s", s.Text)
			}
			for _, o := range s.Open {
				if strings.HasPrefix(o.Why, "pending") {
					t.Errorf("explain says %s will be reconciled: %s", o.ID, o.Why)
				}
			}
		})
	}
}

// playPanic plays the run to its end: through the effect's approval when
// it has one, and, when the panic escapes, through the Step that panics
// after the intent and the Finalize the state machine's Catch calls.
func playPanic(t *testing.T, e *harnesstest.Env, agents harness.AgentMap, runID string, effect, escapes bool) {
	t.Helper()
	h := e.Harness(nil, agents, nil)
	e.StepUntil(h, runID)
	if !effect {
		return
	}
	e.Decide(runID, e.PendingApproval(runID), true)
	if !escapes {
		e.StepUntil(h, runID)
		return
	}
	h = e.Harness(nil, agents, func(o *harness.Options) { o.Faults = panicAt(harness.FaultAfterIntent) })
	func() {
		defer func() { _ = recover() }()
		_, _ = h.Step(e.Ctx, runID, time.Minute)
		t.Fatal("the step did not panic")
	}()
	if _, err := h.Finalize(e.Ctx, runID, run.HandlerPanicked("worker defect at after_intent")); err != nil {
		t.Fatal(err)
	}
}
