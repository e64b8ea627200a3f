package harness

// How a Step ends a run or itself: cancelled (its children with it), over
// a limit, refused by the model, stopped for a person on an operation,
// failed before its loop, and the lease released on the way out. Each is
// a function of the values it changes: the pending commit, and the
// transcript where open calls are answered.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// cancel ends the run: open items are skipped, pending approvals cancelled.
func cancel(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending) (Decision, error) {
	if err := cancelChildren(ctx, e, tr, pl, pend, "their parent was cancelled"); err != nil {
		return Decision{}, err
	}
	var cancelApprovals []string
	skipped := 0
	for _, tc := range tr.openCalls() {
		it, ok := pl.get(tc.ID)
		if !ok {
			continue
		}
		if it.Status == run.PlanAwaitingApproval {
			cancelApprovals = append(cancelApprovals, approvalID(it))
			e.tel.approvalClosed(ctx, it.Tool)
		}
		if it.Status == run.PlanPending || it.Status == run.PlanAwaitingApproval {
			finishItem(pend, tr, it, run.PlanSkipped, tool.Result{Content: "skipped: the run was cancelled"}, true)
			skipped++
		}
	}
	pend.setStatus(run.StatusCancelled)
	pend.releaseLease()
	pend.event(run.Event{Type: run.EventRunCancelled, Data: jsonObj("skipped_calls", skipped, "cancelled_approvals", len(cancelApprovals))})
	if err := pend.flush(ctx, store.Commit{CancelApprovals: cancelApprovals}); err != nil {
		return Decision{}, err
	}
	return Decision{Next: NextCancelled}, nil
}

// exceeded ends the run failed on a limit; why, when not empty, is added
// to the message (a person stopped a paused run).
func exceeded(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending, limit string, value any, why string) (Decision, error) {
	msg := fmt.Sprintf("budget exceeded: %s (%v)%s", limit, value, why)
	if err := cancelChildren(ctx, e, tr, pl, pend, "their parent ended: "+msg); err != nil {
		return Decision{}, err
	}
	var closeApprovals []string // a finished run asks nobody anything
	for _, tc := range tr.openCalls() {
		if it, ok := pl.get(tc.ID); ok && (it.Status == run.PlanPending || it.Status == run.PlanAwaitingApproval) {
			if it.Status == run.PlanAwaitingApproval {
				closeApprovals = append(closeApprovals, approvalID(it))
				e.tel.approvalClosed(ctx, it.Tool)
				pend.event(run.Event{Type: run.EventApprovalCancelled, PlanItemID: it.ID, Data: jsonObj("approval_id", approvalID(it), "by", limit)})
			}
			finishItem(pend, tr, it, run.PlanSkipped, tool.Result{Content: "skipped: " + msg}, true)
		}
	}
	data := jsonObj("limit", limit, "value", value)
	if why != "" {
		// Why the run failed rather than paused, or who stopped it.
		data = jsonObj("limit", limit, "value", value, "why", strings.TrimPrefix(why, "; "))
	}
	pend.event(run.Event{Type: run.EventBudgetExceeded, Data: data})
	pend.event(run.Event{Type: run.EventRunFailed, Data: jsonObj("error", msg)})
	pend.setStatus(run.StatusFailed)
	pend.setError(msg)
	pend.releaseLease()
	if err := pend.flush(ctx, store.Commit{CancelApprovals: closeApprovals}); err != nil {
		return Decision{}, err
	}
	return Decision{Next: NextFailed, Error: msg}, nil
}

// cancelChildren cascades the run's end to the children it waits for;
// their calls are answered as skipped. A child that ended already is
// left as it is (CancelRun is a no-op on it).
func cancelChildren(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending, why string) error {
	for _, tc := range tr.openCalls() {
		it, ok := pl.get(tc.ID)
		if _, del := e.tools.delegating(tc.Name); !ok || !del || it.Status != run.PlanRunning || e.opt.Children == nil {
			continue
		}
		id := run.ChildRunID(e.run.ID, opID(it))
		if err := e.opt.Children.CancelRun(ctx, id, "parent run "+e.run.ID); err != nil {
			return &RetryableError{Err: fmt.Errorf("cancel child run %s: %w", id, err)}
		}
		finishItem(pend, tr, it, run.PlanSkipped, tool.Result{Content: "skipped: child run " + id + " cancelled because " + why}, true)
	}
	return nil
}

// needsHuman stops the run for a person: op, it's operation, may or may
// not have happened, and only a person's settle moves the run on.
func needsHuman(ctx context.Context, pend *pending, it run.PlanItem, op run.Operation, why string) (Decision, bool, error) {
	pend.event(run.Event{Type: run.EventOpNeedsHuman, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("reason", why)})
	pend.event(run.Event{Type: run.EventRunNeedsHuman, Data: jsonObj("operation_id", op.ID, "reason", why)})
	it.Status = run.PlanNeedsHuman
	it.Result = recordOf(tool.Result{Content: why}, true)
	pend.item(it)
	pend.setStatus(run.StatusNeedsHuman)
	pend.setError(why)
	pend.releaseLease()
	upd := store.OperationUpdate{ID: op.ID, Status: run.OpNeedsHuman, Error: why}
	if err := pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{upd}}); err != nil {
		return Decision{}, true, err
	}
	return Decision{Next: NextNeedsHuman, Error: why}, true, nil
}

// modelRefused fails the run at once on a model error that retrying cannot
// fix (a 401, a 400): retrying the step would only repeat it. The
// run_failed event names the provider, the HTTP status and its request id.
func modelRefused(ctx context.Context, pend *pending, ce *model.CallError) (Decision, error) {
	msg := "model call refused: " + ce.Error()
	data := map[string]any{"error": msg, "kind": model.AttemptClientError, "provider": ce.Provider, "attempts": len(ce.Attempts)}
	var se *model.StatusError
	if errors.As(ce, &se) {
		data["status"], data["request_id"] = se.Status, se.RequestID
	}
	pend.event(run.Event{Type: run.EventModelCallFailed, Data: mustJSON(map[string]any{"error": ce.Error(), "kind": model.AttemptClientError,
		"status": data["status"], "retried": false})})
	pend.event(run.Event{Type: run.EventRunFailed, Data: mustJSON(data)})
	pend.setStatus(run.StatusFailed)
	pend.setError(msg)
	pend.releaseLease()
	if err := pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, err
	}
	return Decision{Next: NextFailed, Error: msg}, nil
}

// failed ends the Step on an error before the loop could start.
func failed(err error) (Decision, error) {
	var fe *FencedError
	if errors.As(err, &fe) {
		return Decision{}, err
	}
	return Decision{}, &RetryableError{Err: err}
}

// finish releases the lease when the Step returns without having done so.
func finish(ctx context.Context, e *env, pend *pending, d Decision, err error) (Decision, error) {
	var fe *FencedError
	if errors.As(err, &fe) {
		e.log.Warn("step fenced: another worker owns the run; stopping without further writes")
		return Decision{}, err
	}
	if pend.token < 0 {
		return d, err
	}
	if !pend.empty() {
		pend.releaseLease()
		if ferr := pend.flush(ctx, store.Commit{}); ferr != nil {
			if errors.As(ferr, &fe) {
				return Decision{}, ferr
			}
			if err == nil {
				err = ferr
			}
		}
		return d, err
	}
	if rerr := e.opt.Store.ReleaseLease(ctx, e.run.ID, pend.token); rerr != nil && !errors.Is(rerr, store.ErrFenced) {
		e.log.Warn("lease not released; it will expire", "err", rerr)
	}
	return d, err
}
