package harness

// Permission modes: a call that needs a person's approval asks, waits
// holding no process, and runs (or is answered "denied") once decided.

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// permit applies the permission mode. allowed=false means the item got an
// answer without running (denied).
func permit(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending, it run.PlanItem, t tool.Tool) (allowed bool, d Decision, stop bool, err error) {
	mode := t.Info().Mode
	if mode == run.ModeSafeReadonly {
		return true, Decision{}, false, nil
	}
	if mode == run.ModeConfirmOnce {
		ok, err := e.opt.Store.HasGrant(ctx, e.run.SessionID, it.Tool)
		if err != nil {
			return false, Decision{}, true, &RetryableError{Err: err}
		}
		if ok {
			return true, Decision{}, false, nil
		}
	}
	apID := approvalID(it)
	ap, err := e.opt.Store.GetApproval(ctx, e.run.ID, apID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if d, stop, err := cancelBeforeAsking(ctx, e, tr, pl, pend); stop || err != nil {
			return false, d, true, err
		}
		ap = run.Approval{ID: apID, RunID: e.run.ID, SessionID: e.run.SessionID, PlanItemID: it.ID, Tool: it.Tool, Mode: mode,
			Args: it.Args, ArgsHash: it.ArgsHash, Status: run.ApprovalPending, CreatedAt: e.opt.Clock()}
		it.Status = run.PlanAwaitingApproval
		pend.item(it)
		pend.setStatus(run.StatusAwaitingApproval)
		pend.event(run.Event{Type: run.EventApprovalRequested, PlanItemID: it.ID, Data: mustJSON(map[string]any{
			"approval_id": apID, "tool": it.Tool, "mode": mode, "args_hash": it.ArgsHash, "args": it.Args})})
		pend.releaseLease()
		if err := pend.flush(ctx, store.Commit{NewApprovals: []run.Approval{ap}}); err != nil {
			return false, Decision{}, true, err
		}
		e.tel.approvalRequested(ctx, ap)
		e.opt.Faults.Hit(FaultAwaitApproval)
		return false, approvalDecision(e, apID), true, nil
	case err != nil:
		return false, Decision{}, true, &RetryableError{Err: err}
	}
	switch ap.Status {
	case run.ApprovalPending:
		pend.setStatus(run.StatusAwaitingApproval)
		pend.releaseLease()
		if err := pend.flush(ctx, store.Commit{}); err != nil {
			return false, Decision{}, true, err
		}
		return false, approvalDecision(e, apID), true, nil
	case run.ApprovalApproved:
		if ap.ArgsHash != it.ArgsHash {
			return false, Decision{}, true, fmt.Errorf("approval %s covers args %s, item has %s", apID, ap.ArgsHash, it.ArgsHash)
		}
		e.tel.approvalDecided(ctx, ap)
		e.opt.Faults.Hit(FaultAfterDecision)
		pend.setStatus(run.StatusRunning)
		return true, Decision{}, false, nil
	default: // denied or cancelled
		e.tel.approvalDecided(ctx, ap)
		pend.setStatus(run.StatusRunning)
		msg := "The user denied this action."
		if ap.Reason != "" {
			msg += " Reason: " + ap.Reason
		}
		finishItem(pend, tr, it, run.PlanDenied, tool.Result{Content: msg}, true)
		return false, Decision{}, false, nil
	}
}

// cancelBeforeAsking ends the run cancelled when a cancel arrived since
// the Step last read the run (during the model call that proposed the
// action, or the check that paused it at a limit): cancellation stops new
// calls, and an approval asked after it would wait for a person's
// decision on an action they asked to cancel. Every new approval is
// asked through here.
func cancelBeforeAsking(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending) (Decision, bool, error) {
	sig, err := e.opt.Store.RunSignals(ctx, e.run.ID)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	if !sig.CancelRequested {
		return Decision{}, false, nil
	}
	d, err := cancel(ctx, e, tr, pl, pend)
	return d, true, err
}

func approvalDecision(e *env, apID string) Decision {
	timeout := e.opt.ApprovalTimeout
	if dl := e.run.Limits.Deadline; !dl.IsZero() {
		if left := dl.Sub(e.opt.Clock()); left < timeout {
			timeout = left
		}
	}
	secs := int64(timeout.Seconds())
	if secs < 1 {
		secs = 1
	}
	return Decision{Next: NextApproval, ApprovalID: apID, ApprovalTimeoutSeconds: secs}
}
