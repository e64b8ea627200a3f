package harness_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/harness/harnesstest"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// echo is a read-only test tool that counts its calls; gate, when set, is
// called at the start of call n (from 1) and may block it.
type echo struct {
	calls atomic.Int64
	gate  func(n int64)
}

// holdFirst returns a gate that signals entered and blocks the first call
// until release is closed.
func holdFirst() (gate func(int64), entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 1), make(chan struct{})
	return func(n int64) {
		if n == 1 {
			entered <- struct{}{}
			<-release
		}
	}, entered, release
}

func (e *echo) Info() tool.Info {
	return tool.Info{Name: "echo", Mode: run.ModeSafeReadonly, Description: "echo",
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
}

func (e *echo) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	n := e.calls.Add(1)
	if e.gate != nil {
		e.gate(n)
	}
	var a struct{ Text string }
	_ = json.Unmarshal(c.Args, &a)
	return tool.Result{Content: a.Text}, nil
}

// ledger is a destination that honours lookups and idempotency keys
// both: what a well-behaved external system promises.
func ledger() *harnesstest.Ledger {
	return harnesstest.NewLedger("ledger", harnesstest.LedgerOptions{Lookup: true, Idempotent: true})
}

// TestReportRunEndToEnd: the report agent's whole run, through an
// approval of the exact report, publishes it exactly once.
func TestReportRunEndToEnd(t *testing.T) {
	e := newEnv(t)
	to := ledger()
	h := e.Harness(nil, e.ReportAgent(to), nil)
	r := e.CreateRun(harnesstest.ReportAgentName, "s1", nil)

	d := e.StepUntil(h, r.ID)
	if d.Next != harness.NextApproval || d.ApprovalID == "" || d.ApprovalTimeoutSeconds <= 0 {
		t.Fatalf("want an approval decision, got %+v", d)
	}
	if got := e.GetRun(r.ID).Status; got != run.StatusAwaitingApproval {
		t.Fatalf("status = %s, want awaiting_approval", got)
	}
	ap := e.PendingApproval(r.ID)
	if ap.ID != d.ApprovalID || ap.Tool != "publish" {
		t.Fatalf("approval %+v does not match decision %+v", ap, d)
	}
	if want, _ := run.ArgsHash(ap.Args); want != ap.ArgsHash {
		t.Fatalf("approval hash %s is not the hash of its args (%s)", ap.ArgsHash, want)
	}
	// A Step while the approval is pending changes nothing and asks again.
	if d2 := e.StepUntil(h, r.ID); d2.Next != harness.NextApproval || d2.ApprovalID != ap.ID {
		t.Fatalf("second step: %+v", d2)
	}
	if n := len(to.Entries()); n != 0 {
		t.Fatalf("published %d before approval", n)
	}
	e.Decide(r.ID, ap, true)
	d = e.StepUntil(h, r.ID)
	if d.Next != harness.NextDone {
		t.Fatalf("after approval: %+v", d)
	}
	pubs := to.Entries()
	if len(pubs) != 1 {
		t.Fatalf("publications = %d, want exactly 1", len(pubs))
	}
	var args struct{ SHA256 string }
	if err := json.Unmarshal(ap.Args, &args); err != nil || run.HashBytes(pubs[0].Content) != args.SHA256 {
		t.Fatalf("published %d bytes that are not the approved report %s (%v)", len(pubs[0].Content), ap.Args, err)
	}
	got := e.GetRun(r.ID)
	if got.Status != run.StatusCompleted || !strings.Contains(got.Output, "published") {
		t.Fatalf("run = %s %q", got.Status, got.Output)
	}
	evs := e.CheckGapless(r.ID)
	for typ, want := range map[run.EventType]int{run.EventRunCompleted: 1, run.EventOpIntent: 1, run.EventOpSucceeded: 1,
		run.EventApprovalRequested: 1, run.EventApprovalGranted: 1, run.EventToolCompleted: 3, run.EventModelCallCompleted: 4} {
		if got := count(evs, typ); got != want {
			t.Errorf("%s events = %d, want %d", typ, got, want)
		}
	}
	if count(evs, run.EventToolProgress) == 0 {
		t.Error("gather reported no progress")
	}
	// A finished run stays finished.
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("step of a finished run: %+v", d)
	}
}

func TestApprovals(t *testing.T) {
	t.Run("stale hash refused", func(t *testing.T) {
		e := newEnv(t)
		to := ledger()
		h := e.Harness(nil, e.ReportAgent(to), nil)
		r := e.CreateRun(harnesstest.ReportAgentName, "s1", nil)
		e.StepUntil(h, r.ID)
		ap := e.PendingApproval(r.ID)
		_, err := e.Store.DecideApproval(e.Ctx, store.Decision{RunID: r.ID, ApprovalID: ap.ID, Approve: true, ArgsHash: strings.Repeat("0", 64), DecidedBy: "bob"})
		if !errors.Is(err, store.ErrHashMismatch) {
			t.Fatalf("decision with a stale hash: %v, want ErrHashMismatch", err)
		}
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextApproval {
			t.Fatalf("run moved on without a valid approval: %+v", d)
		}
		if n := len(to.Entries()); n != 0 {
			t.Fatal("published without approval")
		}
	})
	t.Run("changed args need a new approval", func(t *testing.T) {
		e := newEnv(t)
		to := ledger()
		script := `{"turns":[
			{"tool_calls":[{"name":"note","args":{"text":"first draft"}}]},
			{"tool_calls":[{"name":"note","args":{"text":"second draft"}}]}]}`
		h := e.Harness(nil, e.Agent("a", script, harnesstest.Note{Mode: run.ModeMutating, To: to}), nil)
		r := e.CreateRun("a", "s1", nil)
		d1 := e.StepUntil(h, r.ID)
		ap1 := e.PendingApproval(r.ID)
		e.Decide(r.ID, ap1, false) // denied: the model re-plans with other args
		d2 := e.StepUntil(h, r.ID)
		if d2.Next != harness.NextApproval || d2.ApprovalID == d1.ApprovalID {
			t.Fatalf("re-planned call: %+v (first %s)", d2, d1.ApprovalID)
		}
		ap2 := e.PendingApproval(r.ID)
		if ap2.ArgsHash == ap1.ArgsHash {
			t.Fatal("new approval has the old hash")
		}
		// The old approval's hash cannot approve the new action.
		_, err := e.Store.DecideApproval(e.Ctx, store.Decision{RunID: r.ID, ApprovalID: ap2.ID, Approve: true, ArgsHash: ap1.ArgsHash, DecidedBy: "bob"})
		if !errors.Is(err, store.ErrHashMismatch) {
			t.Fatalf("old hash on new approval: %v", err)
		}
		e.Decide(r.ID, ap2, true)
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
			t.Fatalf("%+v", d)
		}
		if n := len(to.Entries()); n != 1 {
			t.Fatalf("publications = %d, want 1 (the denied one must not run)", n)
		}
	})
	t.Run("confirm_once asks once per session", func(t *testing.T) {
		e := newEnv(t)
		to := ledger()
		script := `{"turns":[
			{"tool_calls":[{"name":"note","args":{"text":"one"}}]},
			{"tool_calls":[{"name":"note","args":{"text":"two"}}]}]}`
		agents := e.Agent("a", script, harnesstest.Note{Mode: run.ModeConfirmOnce, To: to})
		h := e.Harness(nil, agents, nil)
		asked := func(session string) int {
			r := e.CreateRun("a", session, nil)
			n := 0
			for {
				d := e.StepUntil(h, r.ID)
				if d.Next == harness.NextDone {
					return n
				}
				if d.Next != harness.NextApproval {
					t.Fatalf("%+v", d)
				}
				n++
				e.Decide(r.ID, e.PendingApproval(r.ID), true)
			}
		}
		if n := asked("s1"); n != 1 {
			t.Fatalf("first run in session asked %d times, want 1", n)
		}
		if n := asked("s1"); n != 0 {
			t.Fatalf("second run in the same session asked %d times, want 0", n)
		}
		if n := asked("s2"); n != 1 {
			t.Fatalf("another session asked %d times, want 1", n)
		}
	})
}

// TestReconcileAfterLostResult: the destination acted but the commit of
// its result failed; the next Step reconciles the pending operation by
// what the destination promises, and never makes a second effect.
func TestReconcileAfterLostResult(t *testing.T) {
	isResult := func(c store.Commit) bool {
		for _, u := range c.OperationUpdates {
			if u.Status == run.OpSucceeded {
				return true
			}
		}
		return false
	}
	cases := []struct {
		name       string
		promises   harnesstest.LedgerOptions
		wantNext   harness.Next
		wantPosts  int
		wantStatus run.OpStatus
	}{
		{"lookup finds it", harnesstest.LedgerOptions{Lookup: true, Idempotent: true},
			harness.NextDone, 1, run.OpSucceeded},
		{"idempotent retry without lookup", harnesstest.LedgerOptions{Idempotent: true},
			harness.NextDone, 1, run.OpSucceeded},
		{"none destination needs a human", harnesstest.LedgerOptions{},
			harness.NextNeedsHuman, 1, run.OpNeedsHuman},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			to := harnesstest.NewLedger("ledger", tc.promises)
			faulty := &faultyStore{Store: e.Store, fail: isResult}
			h := e.Harness(faulty, e.ReportAgent(to), nil)
			r := e.CreateRun(harnesstest.ReportAgentName, "s1", nil)
			e.StepUntil(h, r.ID)
			e.Decide(r.ID, e.PendingApproval(r.ID), true)
			if _, err := h.Step(e.Ctx, r.ID, time.Minute); err == nil {
				t.Fatal("the step whose result commit failed reported success")
			}
			if faulty.hits != 1 {
				t.Fatalf("fault hit %d times", faulty.hits)
			}
			if len(to.Entries()) != 1 {
				t.Fatalf("destination has %d publications after dispatch", len(to.Entries()))
			}
			faulty.fail = nil
			e.Clock.Advance(time.Hour) // the failed step's lease expires
			d := e.StepUntil(h, r.ID)
			if d.Next != tc.wantNext {
				t.Fatalf("recovery decision %+v, want %s", d, tc.wantNext)
			}
			if got := len(to.Entries()); got != tc.wantPosts {
				t.Fatalf("publications = %d, want %d", got, tc.wantPosts)
			}
			opsList, _ := e.Store.ListOperations(e.Ctx, r.ID, false)
			if len(opsList) != 1 || opsList[0].Status != tc.wantStatus {
				t.Fatalf("operations: %+v", opsList)
			}
			evs := e.CheckGapless(r.ID)
			if tc.wantNext == harness.NextDone && count(evs, run.EventOpReconciled) != 1 {
				t.Fatal("no op_reconciled event tells the recovery")
			}
			if tc.wantNext == harness.NextNeedsHuman && count(evs, run.EventOpNeedsHuman) != 1 {
				t.Fatal("no op_needs_human event")
			}
		})
	}
}

func TestUncertainDispatch(t *testing.T) {
	t.Run("lost response is reconciled, not resent blindly", func(t *testing.T) {
		e := newEnv(t)
		to := harnesstest.NewLedger("ledger", harnesstest.LedgerOptions{Lookup: true, Idempotent: true, LoseResponses: 1})
		h := e.Harness(nil, e.ReportAgent(to), nil)
		r := e.CreateRun(harnesstest.ReportAgentName, "s1", nil)
		e.StepUntil(h, r.ID)
		e.Decide(r.ID, e.PendingApproval(r.ID), true)
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
			t.Fatalf("%+v", d)
		}
		if n := len(to.Entries()); n != 1 {
			t.Fatalf("publications = %d", n)
		}
		if count(e.Events(r.ID), run.EventOpUncertain) != 1 {
			t.Fatal("the lost response was not recorded as uncertain")
		}
	})
	t.Run("timeout without lookup or idempotency needs a human", func(t *testing.T) {
		e := newEnv(t)
		to := harnesstest.NewLedger("ledger", harnesstest.LedgerOptions{Hang: 200 * time.Millisecond})
		h := e.Harness(nil, e.ReportAgent(to), nil)
		r := e.CreateRun(harnesstest.ReportAgentName, "s1", nil)
		e.StepUntil(h, r.ID)
		e.Decide(r.ID, e.PendingApproval(r.ID), true)
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextNeedsHuman {
			t.Fatalf("%+v", d)
		}
		if n := len(to.Entries()); n != 1 {
			t.Fatalf("the destination got %d requests, want exactly 1 (no second request)", n)
		}
		if got := e.GetRun(r.ID); got.Status != run.StatusNeedsHuman || got.Error == "" {
			t.Fatalf("run %s %q", got.Status, got.Error)
		}
	})
}

func TestTwoConcurrentSteps(t *testing.T) {
	e := newEnv(t)
	gate, entered, release := holdFirst()
	ec := &echo{gate: gate}
	script := `{"turns":[{"tool_calls":[{"name":"echo","args":{"text":"x"}}]},{"tool_calls":[{"name":"echo","args":{"text":"y"}}]}]}`
	agents := e.Agent("a", script, ec)
	h1 := e.Harness(nil, agents, func(o *harness.Options) { o.Owner = "w1"; o.LeaseTTL = time.Second })
	h2 := e.Harness(nil, agents, func(o *harness.Options) { o.Owner = "w2"; o.LeaseTTL = time.Second })
	r := e.CreateRun("a", "s1", nil)

	var err1 error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err1 = h1.Step(e.Ctx, r.ID, time.Second)
	}()
	<-entered // w1 holds the lease and is inside a tool
	// Contention is a wait, never an error the state machine could count
	// down to a failed run.
	if d, err := h2.Step(e.Ctx, r.ID, time.Second); err != nil || d.Next != harness.NextWait || !d.Busy || d.WaitSeconds < 1 {
		t.Fatalf("second worker during a live lease: %+v, %v; want a busy wait", d, err)
	}
	e.Clock.Advance(time.Hour) // w1 stalls past its lease: w2 takes over
	d := e.StepUntil(h2, r.ID)
	close(release) // now the stale w1 wakes up and tries to commit
	wg.Wait()
	if !errors.As(err1, new(*harness.FencedError)) {
		t.Fatalf("stale worker: %v, want FencedError", err1)
	}
	if d.Next != harness.NextDone {
		t.Fatalf("new worker: %+v", d)
	}
	evs := e.CheckGapless(r.ID)
	if n := count(evs, run.EventRunCompleted); n != 1 {
		t.Fatalf("run_completed %d times", n)
	}
	if n := count(evs, run.EventToolCompleted); n != 2 {
		t.Fatalf("tool_completed %d times: the stale worker's result leaked in", n)
	}
}

func TestBudgets(t *testing.T) {
	t.Run("concurrent dispatch cannot overspend", func(t *testing.T) {
		e := newEnv(t)
		ec := &echo{}
		var calls []string
		for i := 0; i < 6; i++ {
			calls = append(calls, fmt.Sprintf(`{"name":"echo","args":{"text":"%d"}}`, i))
		}
		script := `{"turns":[{"tool_calls":[` + strings.Join(calls, ",") + `]}]}`
		h := e.Harness(nil, e.Agent("a", script, ec), nil)
		r := e.CreateRun("a", "s1", func(r *run.Run) { r.Limits.MaxToolCalls = 4 })
		d := e.StepUntil(h, r.ID)
		if d.Next != harness.NextFailed {
			t.Fatalf("%+v", d)
		}
		if n := ec.calls.Load(); n != 4 {
			t.Fatalf("ran %d tool calls with a limit of 4", n)
		}
		got := e.GetRun(r.ID)
		if got.Budget.ToolCallsUsed != 4 || got.Budget.ToolCallsReserved != 0 {
			t.Fatalf("budget %+v", got.Budget)
		}
		if count(e.Events(r.ID), run.EventBudgetExceeded) != 1 {
			t.Fatal("no budget_exceeded event")
		}
	})
	cases := []struct {
		name   string
		limits func(*run.Limits, time.Time)
		limit  string
	}{
		{"max steps", func(l *run.Limits, _ time.Time) { l.MaxSteps = 3 }, "max_steps"},
		{"deadline", func(l *run.Limits, now time.Time) { l.Deadline = now.Add(-time.Second) }, "deadline"},
		{"max tokens", func(l *run.Limits, _ time.Time) { l.MaxTokens = 50 }, "max_tokens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ec := &echo{}
			h := e.Harness(nil, e.Agent("a", `{"turns":[{"repeat":10,"tool_calls":[{"name":"echo","args":{"text":"x"}}]}]}`, ec), nil)
			r := e.CreateRun("a", "s1", func(r *run.Run) { tc.limits(&r.Limits, e.Clock.Now()) })
			d := e.StepUntil(h, r.ID)
			if d.Next != harness.NextFailed || !strings.Contains(d.Error, tc.limit) {
				t.Fatalf("%+v", d)
			}
			got := e.GetRun(r.ID)
			if got.Status != run.StatusFailed || !strings.Contains(got.Error, tc.limit) {
				t.Fatalf("run %s %q", got.Status, got.Error)
			}
			var ev run.Event
			for _, x := range e.CheckGapless(r.ID) {
				if x.Type == run.EventBudgetExceeded {
					ev = x
				}
			}
			if !strings.Contains(string(ev.Data), tc.limit) {
				t.Fatalf("budget_exceeded event %s", ev.Data)
			}
			if tc.limit == "max_steps" && got.StepCount != 3 {
				t.Fatalf("steps = %d", got.StepCount)
			}
		})
	}
}

func TestCancelMidRun(t *testing.T) {
	e := newEnv(t)
	gate, entered, release := holdFirst()
	ec := &echo{gate: gate}
	script := `{"turns":[{"repeat":5,"tool_calls":[{"name":"echo","args":{"text":"x"}}]}]}`
	h := e.Harness(nil, e.Agent("a", script, ec), nil)
	r := e.CreateRun("a", "s1", nil)
	done := make(chan harness.Decision)
	go func() {
		d, err := h.Step(e.Ctx, r.ID, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- d
	}()
	<-entered // a tool call is in flight
	if _, _, err := e.Store.RequestCancel(e.Ctx, r.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	close(release)
	d := <-done
	if d.Next != harness.NextCancelled {
		t.Fatalf("%+v", d)
	}
	if n := ec.calls.Load(); n != 1 {
		t.Fatalf("%d tool calls ran; no call may start after the cancel", n)
	}
	evs := e.CheckGapless(r.ID)
	if count(evs, run.EventToolCompleted) != 1 || count(evs, run.EventCancelRequested) != 1 || count(evs, run.EventRunCancelled) != 1 {
		t.Fatalf("events: in-flight effect recorded=%d, cancel_requested=%d, run_cancelled=%d",
			count(evs, run.EventToolCompleted), count(evs, run.EventCancelRequested), count(evs, run.EventRunCancelled))
	}
	if count(evs, run.EventModelCallCompleted) != 1 {
		t.Fatal("a model call was made after the cancel")
	}
	if got := e.GetRun(r.ID).Status; got != run.StatusCancelled {
		t.Fatal(got)
	}
}

// cancelDuring is a model that receives a cancel while it answers.
type cancelDuring struct {
	model.Model
	e     *env
	runID string
}

func (c cancelDuring) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if _, _, err := c.e.Store.RequestCancel(ctx, c.runID, "bob"); err != nil {
		return model.Response{}, err
	}
	return c.Model.Generate(ctx, req)
}

func TestCancelDuringModelCall(t *testing.T) {
	e := newEnv(t)
	ec := &echo{}
	agents := e.Agent("a", `{"turns":[{"tool_calls":[{"name":"echo","args":{"text":"x"}}]}]}`, ec)
	r := e.CreateRun("a", "s1", nil)
	a := agents["a"]
	a.Model = cancelDuring{Model: a.Model, e: e, runID: r.ID}
	agents["a"] = a
	h := e.Harness(nil, agents, nil)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextCancelled {
		t.Fatalf("%+v", d)
	}
	if n := ec.calls.Load(); n != 0 {
		t.Fatalf("%d tool calls started after a cancel that arrived during the model call", n)
	}
	if count(e.CheckGapless(r.ID), run.EventToolStarted) != 0 {
		t.Fatal("tool_started after the cancel")
	}
}

func TestCancelWhileAwaitingApproval(t *testing.T) {
	e := newEnv(t)
	h := e.Harness(nil, e.ReportAgent(ledger()), nil)
	r := e.CreateRun(harnesstest.ReportAgentName, "s1", nil)
	e.StepUntil(h, r.ID)
	_, cancelled, err := e.Store.RequestCancel(e.Ctx, r.ID, "bob")
	if err != nil || len(cancelled) != 1 {
		t.Fatalf("cancel: %v, %d approvals cancelled", err, len(cancelled))
	}
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextCancelled {
		t.Fatalf("%+v", d)
	}
	aps, _ := e.Store.ListApprovals(e.Ctx, r.ID)
	if aps[0].Status != run.ApprovalCancelled {
		t.Fatalf("approval %s", aps[0].Status)
	}
	if _, err := e.Store.DecideApproval(e.Ctx, store.Decision{RunID: r.ID, ApprovalID: aps[0].ID, Approve: true, ArgsHash: aps[0].ArgsHash, DecidedBy: "bob"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("approving a cancelled approval: %v", err)
	}
}

func TestInputPolicies(t *testing.T) {
	cases := []struct {
		name       string
		policy     run.InputPolicy
		script     string
		wantOutput string
		wantCalls  int64
	}{
		{"queue: consumed at the next turn", run.InputQueue,
			`{"turns":[{"tool_calls":[{"name":"echo","args":{"text":"x"}}]},{"text":"first answer"},{"text":"second answer"}]}`,
			"second answer", 1},
		{"interrupt: stop after the current tool", run.InputInterrupt,
			`{"turns":[{"tool_calls":[{"name":"echo","args":{"text":"1"}},{"name":"echo","args":{"text":"2"}},{"name":"echo","args":{"text":"3"}}]},{"text":"handled the new input"}]}`,
			"handled the new input", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			gate, entered, release := holdFirst()
			ec := &echo{gate: gate}
			h := e.Harness(nil, e.Agent("a", tc.script, ec), nil)
			r := e.CreateRun("a", "s1", func(r *run.Run) { r.InputPolicy = tc.policy })
			done := make(chan harness.Decision)
			go func() { d, _ := h.Step(e.Ctx, r.ID, time.Minute); done <- d }()
			<-entered
			if _, err := e.Store.EnqueueInput(e.Ctx, r.ID, "new instructions"); err != nil {
				t.Fatal(err)
			}
			close(release)
			if d := <-done; d.Next != harness.NextDone {
				t.Fatalf("%+v", d)
			}
			if got := e.GetRun(r.ID).Output; got != tc.wantOutput {
				t.Fatalf("output %q, want %q", got, tc.wantOutput)
			}
			if n := ec.calls.Load(); n != tc.wantCalls {
				t.Fatalf("tool calls = %d, want %d", n, tc.wantCalls)
			}
			if pending, _ := e.Store.ListInputs(e.Ctx, r.ID, true); len(pending) != 0 {
				t.Fatal("input not consumed")
			}
			if count(e.Events(r.ID), run.EventTurnStarted) != 2 {
				t.Fatal("want two turns")
			}
		})
	}
}

func TestForkReusesRecordedEffects(t *testing.T) {
	e := newEnv(t)
	to := ledger()
	h := e.Harness(nil, e.ReportAgent(to), nil)
	r := e.CreateRun(harnesstest.ReportAgentName, "s1", func(r *run.Run) { r.InputPolicy = run.InputRollback })
	e.StepUntil(h, r.ID)
	// The checkpoint taken at the approval holds the publish call, not its result.
	cpAtApproval := e.GetRun(r.ID).CheckpointID
	e.Decide(r.ID, e.PendingApproval(r.ID), true)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("%+v", d)
	}
	fork := e.CreateRun(harnesstest.ReportAgentName, "s1", func(f *run.Run) {
		f.ParentRunID, f.ForkCheckpointID = r.ID, cpAtApproval
	})
	if d := e.StepUntil(h, fork.ID); d.Next != harness.NextDone {
		t.Fatalf("fork: %+v", d)
	}
	if n := len(to.Entries()); n != 1 {
		t.Fatalf("publications = %d after the fork, want 1: an effect was repeated", n)
	}
	if got := e.GetRun(fork.ID); got.Status != run.StatusCompleted {
		t.Fatal(got.Status)
	}
	evs := e.Events(fork.ID)
	if count(evs, run.EventOpIntent) != 0 || count(evs, run.EventApprovalRequested) != 0 {
		t.Fatal("the fork asked again or dispatched again")
	}
}

func TestInvalidToolCallsNeverDispatched(t *testing.T) {
	e := newEnv(t)
	ec := &echo{}
	script := `{"turns":[{"tool_calls":[{"name":"echo","args":{"wrong":1}},{"name":"nope","args":{}},` +
		`{"name":"echo","args":{"text":"pay","amount":18446744073709551615}}]},{"text":"ok"}]}`
	h := e.Harness(nil, e.Agent("a", script, ec), nil)
	r := e.CreateRun("a", "s1", nil)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("%+v", d)
	}
	if ec.calls.Load() != 0 {
		t.Fatal("an invalid call was dispatched")
	}
	evs := e.Events(r.ID)
	if count(evs, run.EventToolFailed) != 3 {
		t.Fatalf("tool_failed = %d", count(evs, run.EventToolFailed))
	}
	// A number no args hash can bind exactly is refused, and the model is
	// told how to send it.
	told := false
	for _, ev := range evs {
		told = told || ev.Type == run.EventToolFailed && strings.Contains(string(ev.Data), "18446744073709551615") &&
			strings.Contains(string(ev.Data), "pass it as a string")
	}
	if !told {
		t.Fatal("the inexact number was not refused with a message naming it")
	}
	for _, ev := range evs {
		if ev.Type == run.EventToolFailed && !strings.Contains(string(ev.Data), "dispatched\":false") {
			t.Fatalf("tool_failed data %s", ev.Data)
		}
	}
}

func TestCheckpointBytesPerStepStayFlat(t *testing.T) {
	e := newEnv(t)
	ms := &meteredStore{Store: e.Store}
	ec := &echo{}
	h := e.Harness(ms, e.Agent("a", `{"turns":[{"repeat":1000,"tool_calls":[{"name":"echo","args":{"text":"hello"}}]}]}`, ec), nil)
	r := e.CreateRun("a", "s1", func(r *run.Run) { r.Limits.MaxSteps = 2000; r.Limits.MaxToolCalls = 2000; r.Limits.MaxTokens = 1 << 40 })
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("%+v", d)
	}
	if len(ms.sizes) < 1000 {
		t.Fatalf("only %d commits", len(ms.sizes))
	}
	at10, at1000 := ms.sizes[9], ms.sizes[999]
	t.Logf("bytes written by the step commit: step 10 = %d, step 1000 = %d (ratio %.2f)", at10, at1000, float64(at1000)/float64(at10))
	if float64(at1000) > 2*float64(at10) {
		t.Fatalf("step 1000 writes %d bytes, more than twice step 10 (%d): checkpoints are not O(1)", at1000, at10)
	}
}

// progressing is a read-only tool that waits at gate, then reports progress.
type progressing struct{ gate func() }

func (p progressing) Info() tool.Info {
	return tool.Info{Name: "progressing", Mode: run.ModeSafeReadonly, Description: "reports progress",
		Schema: json.RawMessage(`{"type":"object"}`)}
}

func (p progressing) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	p.gate()
	c.Progress(1, 1, "from a stale worker")
	return tool.Result{Content: "done"}, nil
}

// TestStaleWorkerProgressIsFenced: progress of concurrently running tools
// goes through the lease's token, so a worker that lost its lease while its
// tools ran adds nothing to the log.
func TestStaleWorkerProgressIsFenced(t *testing.T) {
	e := newEnv(t)
	entered, release := make(chan struct{}, 2), make(chan struct{})
	p := progressing{gate: func() { entered <- struct{}{}; <-release }}
	script := `{"turns":[{"tool_calls":[{"name":"progressing","args":{}},{"name":"progressing","args":{}}]},{"text":"ok"}]}`
	h := e.Harness(nil, e.Agent("a", script, p), func(o *harness.Options) { o.LeaseTTL = time.Second })
	r := e.CreateRun("a", "s1", nil)
	errc := make(chan error, 1)
	go func() {
		_, err := h.Step(e.Ctx, r.ID, time.Second)
		errc <- err
	}()
	<-entered
	<-entered // both calls run, concurrently, under w1's lease
	e.Clock.Advance(time.Hour)
	if _, err := e.Store.AcquireLease(e.Ctx, r.ID, "w2", time.Hour); err != nil {
		t.Fatal(err)
	}
	before := e.Events(r.ID)
	close(release)
	if err := <-errc; !errors.As(err, new(*harness.FencedError)) {
		t.Fatalf("stale worker: %v, want FencedError", err)
	}
	after := e.Events(r.ID)
	if len(after) != len(before) {
		t.Fatalf("the stale worker wrote %d events after it lost its lease: %v", len(after)-len(before), after[len(before):])
	}
	if n := count(after, run.EventToolProgress); n != 0 {
		t.Fatalf("%d tool_progress events from a stale worker", n)
	}
}

// TestCancelReportsSkippedCalls: run_cancelled counts the calls it skipped,
// not the approvals it withdrew.
func TestCancelReportsSkippedCalls(t *testing.T) {
	e := newEnv(t)
	ec := &echo{}
	n := harnesstest.Note{Mode: run.ModeMutating, To: ledger()}
	script := `{"turns":[{"tool_calls":[{"name":"note","args":{"text":"a"}},{"name":"echo","args":{"text":"b"}},{"name":"echo","args":{"text":"c"}}]}]}`
	h := e.Harness(nil, e.Agent("a", script, ec, n), nil)
	r := e.CreateRun("a", "s1", nil)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextApproval {
		t.Fatalf("%+v", d)
	}
	if _, _, err := e.Store.RequestCancel(e.Ctx, r.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextCancelled {
		t.Fatalf("%+v", d)
	}
	evs := e.Events(r.ID)
	last := evs[len(evs)-1]
	var got struct {
		Skipped   int `json:"skipped_calls"`
		Withdrawn int `json:"cancelled_approvals"`
	}
	if err := json.Unmarshal(last.Data, &got); err != nil || last.Type != run.EventRunCancelled {
		t.Fatalf("last event %s %s (%v)", last.Type, last.Data, err)
	}
	if got.Skipped != 3 || got.Withdrawn != 1 || ec.calls.Load() != 0 {
		t.Fatalf("run_cancelled %s: want 3 skipped calls and 1 withdrawn approval, %d calls ran", last.Data, ec.calls.Load())
	}
}

// TestCorruptRecordFailsLoudly: a recorded result that no longer decodes
// stops the Step with a CorruptRecordError instead of answering the model
// with an empty result (here: a fork reusing its parent's publication).
func TestCorruptRecordFailsLoudly(t *testing.T) {
	e := newEnv(t)
	h := e.Harness(nil, e.ReportAgent(ledger()), nil)
	r := e.CreateRun(harnesstest.ReportAgentName, "s1", func(r *run.Run) { r.InputPolicy = run.InputRollback })
	e.StepUntil(h, r.ID)
	cpAtApproval := e.GetRun(r.ID).CheckpointID
	e.Decide(r.ID, e.PendingApproval(r.ID), true)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("%+v", d)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.Dir, "keel.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if res, err := db.Exec(`UPDATE plan_items SET result = '{"content":' WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND tool = 'publish'`, r.ID); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%d publish items", n)
	}
	fork := e.CreateRun(harnesstest.ReportAgentName, "s1", func(f *run.Run) {
		f.ParentRunID, f.ForkCheckpointID = r.ID, cpAtApproval
	})
	var ce *harness.CorruptRecordError
	for i := 0; i < 20; i++ {
		d, err := h.Step(e.Ctx, fork.ID, time.Minute)
		if errors.As(err, &ce) {
			return
		}
		if err != nil || (d.Next != harness.NextContinue && d.Next != harness.NextWait) {
			t.Fatalf("fork over a corrupt record: %+v, %v; want a CorruptRecordError", d, err)
		}
	}
	t.Fatal("fork never reached the corrupt record")
}

// TestLegacyHashApprovalStillDecides: a plan item and its approval stored
// by a Keel whose args hashes had no version prefix (rewritten here in the
// database to what that Keel wrote) are approved with that hash, and the
// effect runs once, its operation carrying the legacy hash.
func TestLegacyHashApprovalStillDecides(t *testing.T) {
	e := newEnv(t)
	to := ledger()
	h := e.Harness(nil, e.ReportAgent(to), nil)
	r := e.CreateRun(harnesstest.ReportAgentName, "s1", nil)
	e.StepUntil(h, r.ID)
	ap := e.PendingApproval(r.ID)
	legacy, err := run.LegacyArgsHash(ap.Args)
	if err != nil {
		t.Fatal(err)
	}
	oldID := "apr_" + strings.TrimPrefix(ap.PlanItemID, "item_") + "_" + legacy[:16]
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.Dir, "keel.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		// The id is stored as the 14 bytes of its digits (migration 0006).
		{`UPDATE plan_items SET args_hash = ? WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND id = unhex(substr(?, 6))`, []any{legacy, r.ID, ap.PlanItemID}},
		{`UPDATE approvals SET args_hash = ?, id = ? WHERE run_id = ? AND id = ?`, []any{legacy, oldID, r.ID, ap.ID}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	old := e.PendingApproval(r.ID)
	if old.ID != oldID || old.ArgsHash != legacy {
		t.Fatalf("approval as stored: %+v", old)
	}
	e.Decide(r.ID, old, true)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("after approving the legacy hash: %+v", d)
	}
	if n := len(to.Entries()); n != 1 {
		t.Fatalf("publications = %d, want 1", n)
	}
	ops, err := e.Store.ListOperations(e.Ctx, r.ID, false)
	if err != nil || len(ops) != 1 || ops[0].ArgsHash != legacy || ops[0].Status != run.OpSucceeded {
		t.Fatalf("operations %+v (%v)", ops, err)
	}
}

// TestFinishedRunClosesItsApproval (issue #18): a run that ends while its
// approval waits, by its deadline or by Finalize, leaves no approval
// pending that a person could still be offered.
func TestFinishedRunClosesItsApproval(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(e *env, h *harness.Harness, r run.Run)
	}{
		{"deadline during the wait", func(e *env, h *harness.Harness, r run.Run) {
			e.Clock.Advance(2 * time.Hour)
			if d := e.StepUntil(h, r.ID); d.Next != harness.NextFailed {
				t.Fatalf("after the deadline: %+v", d)
			}
		}},
		{"finalize", func(e *env, h *harness.Harness, r run.Run) {
			if _, err := h.Finalize(e.Ctx, r.ID, "States.Timeout: the approval timed out"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := e.Harness(nil, e.ReportAgent(ledger()), nil)
			r := e.CreateRun(harnesstest.ReportAgentName, "s1", func(r *run.Run) { r.Limits.Deadline = e.Clock.Now().Add(time.Hour) })
			if d := e.StepUntil(h, r.ID); d.Next != harness.NextApproval {
				t.Fatalf("%+v", d)
			}
			tc.end(e, h, r)
			if st := e.GetRun(r.ID).Status; st != run.StatusFailed {
				t.Fatalf("status %s", st)
			}
			aps, _ := e.Store.ListApprovals(e.Ctx, r.ID)
			if len(aps) != 1 || aps[0].Status != run.ApprovalCancelled {
				t.Fatalf("approvals %+v, want the one cancelled", aps)
			}
			// Closed in the same write, before run_failed, the log's last word.
			evs := e.CheckGapless(r.ID)
			if evs[len(evs)-1].Type != run.EventRunFailed || count(evs, run.EventApprovalCancelled) != 1 {
				t.Fatalf("last event %s, %d approval_cancelled", evs[len(evs)-1].Type, count(evs, run.EventApprovalCancelled))
			}
		})
	}
}
