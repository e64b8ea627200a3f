package harness_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// readonly is a read-only test tool doing whatever do does.
type readonly struct {
	name string
	do   func() (tool.Result, error)
}

func (r readonly) Info() tool.Info {
	return tool.Info{Name: r.name, Mode: run.ModeSafeReadonly, Description: r.name, Schema: json.RawMessage(`{"type":"object"}`)}
}
func (r readonly) Run(context.Context, tool.Call) (tool.Result, error) { return r.do() }

// failing is the earlier, unrelated error a run has before its panic.
var failing = readonly{name: "lint", do: func() (tool.Result, error) { return tool.Result{}, errors.New("exit status 1") }}

// panicky is an effect that panics where its hooks say; a dispatch that
// panics after sending leaves the operation applied, as a real one might.
type panicky struct {
	contract ops.Contract
	// intentPanics, dispatchPanics, lookupPanics: how many calls, from the
	// first, panic.
	intentPanics, dispatchPanics, lookupPanics int64
	intents, dispatches, lookups               atomic.Int64
	mu                                         sync.Mutex
	applied                                    map[string]bool
}

func (p *panicky) Info() tool.Info {
	return tool.Info{Name: "pub", Mode: run.ModeConfirmOnce, Description: "publish", Schema: json.RawMessage(`{"type":"object"}`)}
}
func (p *panicky) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("effectful")
}
func (p *panicky) Name() string           { return "wiki" }
func (p *panicky) Contract() ops.Contract { return p.contract }
func (p *panicky) Intent(context.Context, tool.Call) (tool.Intent, error) {
	if p.intents.Add(1) <= p.intentPanics {
		panic("intent exploded")
	}
	return tool.Intent{}, nil
}
func (p *panicky) Dispatch(_ context.Context, op run.Operation) (ops.Outcome, error) {
	p.mu.Lock()
	p.applied[op.IdempotencyKey] = true
	p.mu.Unlock()
	if p.dispatches.Add(1) <= p.dispatchPanics {
		p.pages()["page"]++ // assignment to entry in nil map, after the request left
	}
	return ops.Outcome{ExternalID: "page-1"}, nil
}

// pages is the destination's page index, which this defective tool never
// made: a real runtime panic, not one it raises itself.
func (p *panicky) pages() map[string]int { return nil }

func (p *panicky) Lookup(_ context.Context, op run.Operation) (ops.Outcome, bool, error) {
	if p.lookups.Add(1) <= p.lookupPanics {
		panic(fmt.Sprintf("lookup of %s exploded", op.ID))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return ops.Outcome{ExternalID: "page-1"}, p.applied[op.IdempotencyKey], nil
}
func (p *panicky) Describe(op run.Operation) tool.Result {
	return tool.Result{Content: "published " + op.ExternalID}
}

// logLines captures a harness's log as JSON lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// panics are the "tool panicked" lines of the log.
func (l *logLines) panics(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if rec["msg"] == "tool panicked" {
			out = append(out, rec)
		}
	}
	return out
}

// checkPanicLogged wants one log line per panic, each carrying the panic
// value and a stack that reaches the tool's own code.
func checkPanicLogged(t *testing.T, logs *logLines, want int, tool, value, frame string) {
	t.Helper()
	lines := logs.panics(t)
	if len(lines) != want {
		t.Fatalf("%d 'tool panicked' log lines, want %d", len(lines), want)
	}
	for _, l := range lines {
		stack, _ := l["stack"].(string)
		if l["tool"] != tool || !strings.Contains(fmt.Sprint(l["panic"]), value) || !strings.Contains(stack, frame) {
			t.Errorf("log line %v: want tool %s, panic %q and a stack through %s", l, tool, value, frame)
		}
	}
}

// checkPanicRecorded wants the run's records to tell of the panic as
// their readers (explain, the viewer) find it: the first event whose error
// or reason tells of a panic (run.TellsOfPanic) is of kind and carries
// msg, even after lint's earlier, ordinary failure; and no operation is
// left pending, as if it could still be reconciled. (The story explain
// tells of these same runs is held by explain's TestHarnessPanicStory.)
func checkPanicRecorded(t *testing.T, e *env, runID string, kind run.EventType, msg string) {
	t.Helper()
	var first *run.Event
	evs := e.CheckGapless(runID)
	for i, ev := range evs {
		var d struct{ Error, Reason string }
		_ = json.Unmarshal(ev.Data, &d) // an event of another shape has neither
		if run.TellsOfPanic(d.Error) || run.TellsOfPanic(d.Reason) {
			first = &evs[i]
			break
		}
	}
	if first == nil || first.Type != kind || !strings.Contains(string(first.Data), msg) {
		t.Fatalf("first event telling of a panic %+v, want the panic %q in %s", first, msg, kind)
	}
	opList, err := e.Store.ListOperations(e.Ctx, runID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range opList {
		if op.Status == run.OpPending {
			t.Errorf("operation %s is still pending", op.ID)
		}
	}
}

func newLoggedHarness(e *env, agents harness.AgentMap) (*harness.Harness, *logLines) {
	logs := &logLines{}
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	return h, logs
}

// A read-only tool's panic, alone or beside another call (run concurrently,
// where an unrecovered panic would end the process): the item failed with
// the panic's message, the model is told, the run goes on.
func TestReadonlyToolPanic(t *testing.T) {
	cases := []struct {
		name  string
		calls string
	}{
		{"alone", `[{"name":"boom","args":{}}]`},
		{"beside another call", `[{"name":"boom","args":{}},{"name":"echo","args":{"text":"hi"}}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			boom := readonly{name: "boom", do: func() (tool.Result, error) { panic("index out of range [3] with length 3") }}
			script := `{"turns":[{"tool_calls":[{"name":"lint","args":{}}]},{"tool_calls":` + tc.calls + `}],"final":"done"}`
			h, logs := newLoggedHarness(e, e.Agent("a", script, failing, boom, &echo{}))
			r := e.CreateRun("a", "s1", nil)
			if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
				t.Fatalf("decision %+v: the run should go on after the panic and finish", d)
			}
			const want = "tool boom panicked: index out of range [3] with length 3"
			var failed []string
			for _, ev := range e.CheckGapless(r.ID) {
				if ev.Type == run.EventToolFailed {
					var d struct{ Tool, Error string }
					_ = json.Unmarshal(ev.Data, &d)
					failed = append(failed, d.Tool+": "+d.Error)
				}
			}
			if len(failed) != 2 || failed[1] != "boom: "+want {
				t.Fatalf("tool_failed events %q, want lint's then boom: %s", failed, want)
			}
			items, err := e.Store.ListPlanItems(e.Ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.Tool == "boom" && (it.Status != run.PlanFailed || !strings.Contains(string(it.Result), "tool failed: "+want)) {
					t.Errorf("boom's item %s %s, want failed with %q", it.Status, it.Result, want)
				}
			}
			checkPanicLogged(t, logs, 1, "boom", "index out of range", "panics_test.go")
			checkPanicRecorded(t, e, r.ID, run.EventToolFailed, want)
		})
	}
}

// An effect's panic: in Intent nothing was recorded, the item failed; in
// Dispatch the request may have left, so the outcome is unknown and goes
// the way of a dispatch error (reconciled where the destination can be
// asked, to a person where not); in Lookup the destination could not
// answer. No case leaves the operation pending once the run stops.
func TestEffectPanic(t *testing.T) {
	cases := []struct {
		name      string
		eff       *panicky
		status    run.Status
		op        run.OpStatus // "" when no operation may exist
		panics    int
		panicKind run.EventType
		panicMsg  string
		frame     string
	}{
		{"intent", &panicky{intentPanics: 1, contract: ops.Contract{Lookup: true}}, run.StatusCompleted, "", 1,
			run.EventToolFailed, "tool pub panicked: intent exploded", "(*panicky).Intent"},
		{"dispatch, destination cannot be asked", &panicky{dispatchPanics: 1}, run.StatusNeedsHuman, run.OpNeedsHuman, 1,
			run.EventOpNeedsHuman, "tool pub panicked: assignment to entry in nil map", "(*panicky).Dispatch"},
		{"dispatch, destination has a lookup", &panicky{dispatchPanics: 1, contract: ops.Contract{Lookup: true}}, run.StatusCompleted, run.OpSucceeded, 1,
			run.EventOpUncertain, "tool pub panicked: assignment to entry in nil map", "(*panicky).Dispatch"},
		{"dispatch and then lookup", &panicky{dispatchPanics: 1, lookupPanics: 1, contract: ops.Contract{Lookup: true}}, run.StatusCompleted, run.OpSucceeded, 2,
			run.EventOpUncertain, "tool pub panicked: assignment to entry in nil map", "(*panicky)."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tc.eff.applied = map[string]bool{}
			script := `{"turns":[{"tool_calls":[{"name":"lint","args":{}}]},{"tool_calls":[{"name":"pub","args":{}}]}],"final":"done"}`
			h, logs := newLoggedHarness(e, e.Agent("a", script, failing, tc.eff))
			r := e.CreateRun("a", "s1", nil)
			e.StepUntil(h, r.ID)
			e.Decide(r.ID, e.PendingApproval(r.ID), true)
			e.StepUntil(h, r.ID)
			got := e.GetRun(r.ID)
			if got.Status != tc.status {
				t.Fatalf("run %s (%q), want %s", got.Status, got.Error, tc.status)
			}
			opList, err := e.Store.ListOperations(e.Ctx, r.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.op == "" && len(opList) != 0 || tc.op != "" && (len(opList) != 1 || opList[0].Status != tc.op) {
				t.Fatalf("operations %+v, want one %q", opList, tc.op)
			}
			if n := len(tc.eff.applied); tc.op != "" && n != 1 {
				t.Errorf("the destination applied %d operations, want 1", n)
			}
			checkPanicLogged(t, logs, tc.panics, "pub", "", tc.frame)
			checkPanicRecorded(t, e, r.ID, tc.panicKind, tc.panicMsg)
		})
	}
}

// panicAt panics at one fault point: a defect of the worker itself, which
// no recovery around a tool call catches.
type panicAt string

func (p panicAt) Hit(name string) {
	if name == string(p) {
		panic("worker defect at " + name)
	}
}

// A panic that escapes the step between intent and result ends in
// Finalize (the state machine's Catch); the operation it leaves pending
// has no known outcome, so Finalize does not fail the run (a person would
// run it again): it ends needs_human and hands the operation to a person.
func TestFinalizeHandsOverAnOperationInFlight(t *testing.T) {
	e := newEnv(t)
	eff := &panicky{contract: ops.Contract{Lookup: true}, applied: map[string]bool{}}
	script := `{"turns":[{"tool_calls":[{"name":"lint","args":{}}]},{"tool_calls":[{"name":"pub","args":{}}]}],"final":"done"}`
	agents := e.Agent("a", script, failing, eff)
	r := e.CreateRun("a", "s1", nil)
	e.StepUntil(e.Harness(nil, agents, nil), r.ID)
	e.Decide(r.ID, e.PendingApproval(r.ID), true)
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Faults = panicAt(harness.FaultAfterIntent) })
	func() {
		defer func() { _ = recover() }()
		_, _ = h.Step(e.Ctx, r.ID, time.Minute)
		t.Fatal("the step did not panic")
	}()
	if _, err := h.Finalize(e.Ctx, r.ID, run.HandlerPanicked("worker defect at after_intent")); err != nil {
		t.Fatal(err)
	}
	if got := e.GetRun(r.ID); got.Status != run.StatusNeedsHuman {
		t.Fatalf("run %s, want needs_human", got.Status)
	}
	opList, err := e.Store.ListOperations(e.Ctx, r.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(opList) != 1 || opList[0].Status != run.OpNeedsHuman || !strings.Contains(opList[0].Error, "ask wiki for idempotency key "+opList[0].ID) {
		t.Fatalf("operations %+v, want one needs_human naming its key", opList)
	}
	items, err := e.Store.ListPlanItems(e.Ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.ID == opList[0].PlanItemID && it.Status != run.PlanNeedsHuman {
			t.Errorf("the operation's plan item is %s, want needs_human", it.Status)
		}
	}
	checkPanicRecorded(t, e, r.ID, run.EventOpNeedsHuman, "handler panic: worker defect at after_intent")
}
