package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// permit applies the permission mode. allowed=false means the item got an
// answer without running (denied).
func (s *step) permit(ctx context.Context, it run.PlanItem, t tool.Tool) (allowed bool, d Decision, stop bool, err error) {
	mode := t.Info().Mode
	if mode == run.ModeSafeReadonly {
		return true, Decision{}, false, nil
	}
	if mode == run.ModeConfirmOnce {
		ok, err := s.opt.Store.HasGrant(ctx, s.run.SessionID, it.Tool)
		if err != nil {
			return false, Decision{}, true, &RetryableError{Err: err}
		}
		if ok {
			return true, Decision{}, false, nil
		}
	}
	apID := approvalID(it)
	ap, err := s.opt.Store.GetApproval(ctx, s.run.ID, apID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if d, stop, err := s.cancelBeforeAsking(ctx); stop || err != nil {
			return false, d, true, err
		}
		ap = run.Approval{ID: apID, RunID: s.run.ID, SessionID: s.run.SessionID, PlanItemID: it.ID, Tool: it.Tool, Mode: mode,
			Args: it.Args, ArgsHash: it.ArgsHash, Status: run.ApprovalPending, CreatedAt: s.opt.Clock()}
		it.Status = run.PlanAwaitingApproval
		s.pend.item(it)
		s.pend.setStatus(run.StatusAwaitingApproval)
		s.pend.event(run.Event{Type: run.EventApprovalRequested, PlanItemID: it.ID, Data: mustJSON(map[string]any{
			"approval_id": apID, "tool": it.Tool, "mode": mode, "args_hash": it.ArgsHash, "args": it.Args})})
		s.pend.releaseLease()
		if err := s.pend.flush(ctx, store.Commit{NewApprovals: []run.Approval{ap}}); err != nil {
			return false, Decision{}, true, err
		}
		s.tel.approvalRequested(ctx, ap)
		s.opt.Faults.Hit(FaultAwaitApproval)
		return false, s.approvalDecision(apID), true, nil
	case err != nil:
		return false, Decision{}, true, &RetryableError{Err: err}
	}
	switch ap.Status {
	case run.ApprovalPending:
		s.pend.setStatus(run.StatusAwaitingApproval)
		s.pend.releaseLease()
		if err := s.pend.flush(ctx, store.Commit{}); err != nil {
			return false, Decision{}, true, err
		}
		return false, s.approvalDecision(apID), true, nil
	case run.ApprovalApproved:
		if ap.ArgsHash != it.ArgsHash {
			return false, Decision{}, true, fmt.Errorf("approval %s covers args %s, item has %s", apID, ap.ArgsHash, it.ArgsHash)
		}
		s.tel.approvalDecided(ctx, ap)
		s.opt.Faults.Hit(FaultAfterDecision)
		s.pend.setStatus(run.StatusRunning)
		return true, Decision{}, false, nil
	default: // denied or cancelled
		s.tel.approvalDecided(ctx, ap)
		s.pend.setStatus(run.StatusRunning)
		msg := "The user denied this action."
		if ap.Reason != "" {
			msg += " Reason: " + ap.Reason
		}
		finishItem(&s.pend, &s.tr, it, run.PlanDenied, tool.Result{Content: msg}, true)
		return false, Decision{}, false, nil
	}
}

// cancelBeforeAsking ends the run cancelled when a cancel arrived since
// the Step last read the run (during the model call that proposed the
// action, or the check that paused it at a limit): cancellation stops new
// calls, and an approval asked after it would wait for a person's
// decision on an action they asked to cancel. Every new approval is
// asked through here.
func (s *step) cancelBeforeAsking(ctx context.Context) (Decision, bool, error) {
	sig, err := s.opt.Store.RunSignals(ctx, s.run.ID)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	if !sig.CancelRequested {
		return Decision{}, false, nil
	}
	s.run.CancelRequested = true
	d, err := s.cancel(ctx)
	return d, true, err
}

func (s *step) approvalDecision(apID string) Decision {
	timeout := s.opt.ApprovalTimeout
	if dl := s.run.Limits.Deadline; !dl.IsZero() {
		if left := dl.Sub(s.opt.Clock()); left < timeout {
			timeout = left
		}
	}
	secs := int64(timeout.Seconds())
	if secs < 1 {
		secs = 1
	}
	return Decision{Next: NextApproval, ApprovalID: apID, ApprovalTimeoutSeconds: secs}
}

// runReadonly runs read-only calls; more than one run concurrently, each
// holding a reservation in the store (a tool call and the tool's price) so
// that together they cannot pass a limit. Calls refused a reservation
// fail under a failing policy; under a pausing one they stay pending and
// run after the raise.
func (s *step) runReadonly(ctx context.Context, group []run.PlanItem) (Decision, bool, error) {
	if len(group) == 1 {
		t, _ := s.tools.get(ctx, group[0].Tool)
		if limit, v := s.callOver(t); limit != "" {
			d, err := s.atLimit(ctx, limit, v)
			return d, true, err
		}
		s.pend.use(store.Amounts{ToolCalls: 1, SpendMicroUSD: price(t)})
		s.execReadonly(ctx, group[0])
		return Decision{}, false, nil
	}
	if err := s.pend.flush(ctx, store.Commit{}); err != nil { // reservations must see what we used
		return Decision{}, true, err
	}
	outs := s.reserveAndRun(ctx, group)
	var refused tool.Tool
	for i, it := range group {
		o := outs[i]
		if !o.reserved {
			if errors.Is(o.err, store.ErrBudgetExceeded) {
				if refused == nil {
					refused = o.tool
				}
				if s.agent.OnLimit.Pause {
					continue // runs after the raise
				}
			}
			s.pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool, "error", errString(o.err), "dispatched", false)})
			finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: "not run: " + errString(o.err)}, true)
			continue
		}
		a := store.Amounts{ToolCalls: 1, SpendMicroUSD: price(o.tool)}
		s.pend.release(a)
		s.pend.use(a)
		// The call's tool_started would land in this commit with its
		// result: the result carries the start and the duration instead.
		s.toolDone(it, o.res, o.err, toolSpan{start: o.started, end: o.done, concurrent: true})
	}
	if refused != nil {
		limit, v := s.callOver(refused)
		if limit == "" { // refused by the store under limits this worker had not seen
			limit, v = "max_tool_calls", s.run.Limits.MaxToolCalls
		}
		d, err := s.atLimit(ctx, limit, v)
		return d, true, err
	}
	return Decision{}, false, nil
}

// readonlyOutcome is one concurrent call's reservation and result.
type readonlyOutcome struct {
	tool     tool.Tool
	reserved bool
	res      tool.Result
	err      error
	started  time.Time
	done     time.Time
}

// reserveAndRun runs group's calls concurrently, each once the store
// reserved it a tool call and its price.
func (s *step) reserveAndRun(ctx context.Context, group []run.PlanItem) []readonlyOutcome {
	outs := make([]readonlyOutcome, len(group))
	var wg sync.WaitGroup
	for i, it := range group {
		t, _ := s.tools.get(ctx, it.Tool)
		outs[i].tool = t
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.opt.Store.Reserve(ctx, s.run.ID, store.Amounts{ToolCalls: 1, SpendMicroUSD: price(t)}); err != nil {
				outs[i].err = err
				return
			}
			outs[i].reserved = true
			outs[i].started = s.opt.Clock()
			outs[i].res, outs[i].err = s.invoke(ctx, it, true, nil)
			outs[i].done = s.opt.Clock()
		}()
	}
	wg.Wait()
	return outs
}

// toolSpan is when a call ran, for the tool_completed or tool_failed event
// that stands for its tool_started too.
type toolSpan struct {
	start, end time.Time
	concurrent bool
	// logged: the tool_started event was committed before the result (a
	// progress report flushed it), so the result need not carry the span.
	logged bool
}

func (sp toolSpan) micros() int64 {
	if sp.logged {
		return -1
	}
	return micros(sp.end.Sub(sp.start))
}

// execReadonly runs one read-only call. Its tool_started is held back:
// when nothing is committed before the result, it would land in the same
// commit as tool_completed and is left out; a progress report that
// commits first writes it ahead of itself (invoke).
func (s *step) execReadonly(ctx context.Context, it run.PlanItem) {
	sp := &toolSpan{start: s.opt.Clock()}
	res, err := s.invoke(ctx, it, false, sp)
	sp.end = s.opt.Clock()
	s.toolDone(it, res, err, *sp)
}

func (s *step) toolDone(it run.PlanItem, res tool.Result, err error, sp toolSpan) {
	if err != nil {
		data := map[string]any{"tool": it.Tool, "error": err.Error(), "dispatched": true}
		if us := sp.micros(); us >= 0 {
			data["duration_us"] = us
		}
		if sp.concurrent {
			data["concurrent"] = true
		}
		s.pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: mustJSON(data)})
		finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: "tool failed: " + err.Error()}, true)
		return
	}
	s.pend.event(run.Event{Type: run.EventToolCompleted, PlanItemID: it.ID, Data: toolDoneData(it.Tool, len(res.Content), sp.micros(), sp.concurrent)})
	finishItem(&s.pend, &s.tr, it, run.PlanCompleted, res, false)
}

// invoke runs a tool, forwarding progress as tool_progress events. A tool
// running alone has its progress committed under the lease with whatever
// the step has pending, so the log reads in order (tool_started before its
// progress); calls running concurrently commit progress on their own. Both
// go through the lease's token: a fenced worker cannot report progress.
// held, for a call running alone, is its tool_started held back: the first
// progress report commits it, ahead of itself.
func (s *step) invoke(ctx context.Context, it run.PlanItem, concurrent bool, held *toolSpan) (tool.Result, error) {
	t, _ := s.tools.get(ctx, it.Tool)
	var mu sync.Mutex
	lastPct := int64(-1)
	call := tool.Call{RunID: s.run.ID, PlanItemID: it.ID, CheckpointID: s.cur.checkpoint, Args: it.Args, Progress: func(done, total int64, note string) {
		if total <= 0 {
			return
		}
		pct := done * 100 / total
		mu.Lock()
		report := pct >= lastPct+10 || done == total
		if report {
			lastPct = pct
		}
		mu.Unlock()
		if !report {
			return
		}
		ev := run.Event{Type: run.EventToolProgress, PlanItemID: it.ID, Time: s.opt.Clock(),
			Data: s.red.bytes(jsonObj("tool", it.Tool, "done", done, "total", total, "note", note))}
		// Progress is advisory: a failure to record it does not fail the tool.
		var err error
		if concurrent {
			// Carrying nothing else: the other calls' goroutines own no
			// part of the pending records.
			err = s.pend.progress(ctx, ev)
		} else {
			mu.Lock()
			if held != nil && !held.logged {
				held.logged = true
				s.pend.event(run.Event{Type: run.EventToolStarted, PlanItemID: it.ID, Time: held.start, Data: jsonObj("tool", it.Tool)})
			}
			s.pend.event(ev)
			err = s.pend.flush(ctx, store.Commit{})
			mu.Unlock()
		}
		if err != nil {
			s.log.Warn("tool progress not recorded", "err", err)
		}
	}}
	// A new name, not ctx: the progress callback above captures ctx, and
	// reassigning it would move it to the heap on every call.
	tctx, sp := s.tel.startTool(ctx, it, false)
	res, err := runTool(tctx, &s.env, t, it.Tool, call)
	s.tel.endTool(tctx, sp, res, err)
	return res, err
}
