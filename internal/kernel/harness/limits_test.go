package harness_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// pricedEcho is echo with a price per call.
type pricedEcho struct {
	echo
	price int64
}

func (p *pricedEcho) Info() tool.Info {
	i := p.echo.Info()
	i.CostMicroUSD = p.price
	return i
}

// pausingAgent is an agent whose model calls the priced echo n times in
// one answer, then answers "done"; its runs pause at a limit.
func (e *env) pausingAgent(n int, pe *pricedEcho, pol harness.LimitPolicy) harness.AgentMap {
	var calls []string
	for i := range n {
		calls = append(calls, fmt.Sprintf(`{"name":"echo","args":{"text":"%d"}}`, i))
	}
	m := e.Agent("a", `{"turns":[{"tool_calls":[`+strings.Join(calls, ",")+`]},{"text":"done"}]}`, pe)
	a := m["a"]
	a.OnLimit = pol
	m["a"] = a
	return m
}

func TestBudgetPause(t *testing.T) {
	const price, calls = 1_000, 20
	t.Run("concurrent priced calls pause at the cap, a raise completes the run", func(t *testing.T) {
		e := newEnv(t)
		pe := &pricedEcho{price: price}
		h := e.Harness(nil, e.pausingAgent(calls, pe, harness.LimitPolicy{Pause: true, RaiseBy: run.Limits{MaxSpendMicroUSD: 20 * price}}), nil)
		r := e.CreateRun("a", "s1", func(r *run.Run) { r.Limits.MaxSpendMicroUSD = 10 * price })
		d := e.StepUntil(h, r.ID)
		if d.Next != harness.NextApproval {
			t.Fatalf("want a pause (approval), got %+v", d)
		}
		got := e.GetRun(r.ID)
		if got.Status != run.StatusAwaitingApproval || got.Budget.SpendUsedMicroUSD > got.Limits.MaxSpendMicroUSD ||
			got.Budget.SpendUsedMicroUSD != 10*price || got.Budget.SpendReservedMicroUSD != 0 {
			t.Fatalf("paused run: %s, budget %+v, limits %+v", got.Status, got.Budget, got.Limits)
		}
		if n := pe.calls.Load(); n != 10 {
			t.Fatalf("%d calls ran under a cap of 10", n)
		}
		ap := e.PendingApproval(r.ID)
		var args harness.RaiseArgs
		if err := json.Unmarshal(ap.Args, &args); err != nil || ap.Tool != harness.RaiseLimitTool || ap.ID != d.ApprovalID ||
			args != (harness.RaiseArgs{Limit: "max_spend", Now: 10 * price, RaiseBy: 20 * price, After: 30 * price}) {
			t.Fatalf("approval %+v args %+v (%v)", ap, args, err)
		}
		notes, err := e.Store.ListNotifications(e.Ctx, r.ID)
		if err != nil || len(notes) != 1 || notes[0].ApprovalID != ap.ID || notes[0].ArgsHash != ap.ArgsHash {
			t.Fatalf("the pause's notification, written with it: %+v %v", notes, err)
		}
		// Still pending: another Step asks again and runs nothing.
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextApproval || pe.calls.Load() != 10 {
			t.Fatalf("step while paused: %+v, %d calls", d, pe.calls.Load())
		}
		e.Decide(r.ID, ap, true)
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
			t.Fatalf("after the raise: %+v", d)
		}
		got = e.GetRun(r.ID)
		if got.Limits.MaxSpendMicroUSD != 30*price || got.Budget.SpendUsedMicroUSD != calls*price || pe.calls.Load() != calls {
			t.Fatalf("completed run: limits %+v budget %+v, %d calls", got.Limits, got.Budget, pe.calls.Load())
		}
		var raised []run.Event
		for _, ev := range e.CheckGapless(r.ID) {
			if ev.Type == run.EventBudgetRaised {
				raised = append(raised, ev)
			}
		}
		if len(raised) != 1 || !strings.Contains(string(raised[0].Data), `"approved_by":"bob"`) ||
			!strings.Contains(string(raised[0].Data), fmt.Sprintf(`"by":%d`, 20*price)) {
			t.Fatalf("budget_raised events %+v", raised)
		}
	})
	t.Run("a denied raise fails the run naming who stopped it", func(t *testing.T) {
		e := newEnv(t)
		pe := &pricedEcho{price: price}
		h := e.Harness(nil, e.pausingAgent(3, pe, harness.LimitPolicy{Pause: true}), nil)
		r := e.CreateRun("a", "s1", func(r *run.Run) { r.Limits.MaxToolCalls = 2 })
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextApproval {
			t.Fatalf("%+v", d)
		}
		ap := e.PendingApproval(r.ID)
		if !strings.Contains(string(ap.Args), `"raise_by":2`) { // zero RaiseBy: the limit's size again
			t.Fatalf("args %s", ap.Args)
		}
		if _, err := e.Store.DecideApproval(e.Ctx, store.Decision{RunID: r.ID, ApprovalID: ap.ID, ArgsHash: ap.ArgsHash, DecidedBy: "bob",
			Reason: "the vendor is down, no point"}); err != nil {
			t.Fatal(err)
		}
		d := e.StepUntil(h, r.ID)
		if d.Next != harness.NextFailed || !strings.Contains(d.Error, "max_tool_calls") || !strings.Contains(d.Error, "bob stopped") {
			t.Fatalf("%+v", d)
		}
		// raise --stop --reason: the person's words are in the log.
		evs := e.CheckGapless(r.ID)
		if last := evs[len(evs)-1]; last.Type != run.EventRunFailed || !strings.Contains(string(last.Data), "bob stopped the run instead of raising it: the vendor is down, no point") {
			t.Fatalf("last event %s %s: want run_failed with the reason", last.Type, last.Data)
		}
		if n := pe.calls.Load(); n != 2 {
			t.Fatalf("%d calls", n)
		}
	})
	t.Run("the deadline fails a pausing run", func(t *testing.T) {
		e := newEnv(t)
		h := e.Harness(nil, e.pausingAgent(1, &pricedEcho{}, harness.LimitPolicy{Pause: true}), nil)
		r := e.CreateRun("a", "s1", func(r *run.Run) { r.Limits.Deadline = e.Clock.Now().Add(-1) })
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextFailed || !strings.Contains(d.Error, "deadline") {
			t.Fatalf("%+v", d)
		}
		if aps, err := e.Store.ListApprovals(e.Ctx, r.ID); err != nil || len(aps) != 0 {
			t.Fatalf("approvals %+v %v", aps, err)
		}
	})
	t.Run("a failing policy fails as before", func(t *testing.T) {
		e := newEnv(t)
		pe := &pricedEcho{price: price}
		h := e.Harness(nil, e.pausingAgent(calls, pe, harness.LimitPolicy{}), nil)
		r := e.CreateRun("a", "s1", func(r *run.Run) { r.Limits.MaxSpendMicroUSD = 10 * price })
		if d := e.StepUntil(h, r.ID); d.Next != harness.NextFailed || !strings.Contains(d.Error, "max_spend") {
			t.Fatalf("%+v", d)
		}
		if got := e.GetRun(r.ID); got.Budget.SpendUsedMicroUSD != 10*price {
			t.Fatalf("budget %+v", got.Budget)
		}
	})
}
