package harness

// A run a person settled: each plan item left needs_human whose operation
// now has an outcome is answered with the truth before the model is
// called again; an operation a person established did not happen is
// dispatched once more, with the same operation id, through the protocol.

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// attemptAgain dispatches once more an operation a person settled as not
// happened: store.SettleNotHappened left it pending and its plan item
// needs_human, a pair nothing else leaves. Its intent is recorded again
// first, in one commit — attempts+1, op_intent, the item running — so a
// crash from then on finds an ordinary pending operation in flight and
// reconciles it like any other (a destination that promises nothing hands
// it to a person again). Then it is dispatched with its own id as the
// idempotency key and unchanged arguments, and its outcome recorded.
func attemptAgain(ctx context.Context, e *env, tr *transcript, pend *pending, it run.PlanItem, t tool.Effectful, op run.Operation) (Decision, bool, error) {
	if op.IdempotencyKey != op.ID || run.VerifyArgsHash(op.Args, op.ArgsHash) != nil {
		return needsHuman(ctx, pend, it, op, fmt.Sprintf("operation %s cannot be dispatched again as recorded: its key or arguments are not the ones of its intent", op.ID))
	}
	op.Attempts++
	it.Status = run.PlanRunning
	pend.item(it)
	pend.event(run.Event{Type: run.EventToolStarted, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool)})
	pend.event(run.Event{Type: run.EventOpIntent, PlanItemID: it.ID, OperationID: op.ID, Data: mustJSON(map[string]any{
		"destination": op.Destination, "contract": t.Contract().String(), "args_hash": op.ArgsHash, "artifact_hash": op.ArtifactHash,
		"attempt": op.Attempts, "why": op.Error})})
	e.opt.Faults.Hit(FaultBeforeIntent)
	again := store.OperationUpdate{ID: op.ID, Status: run.OpPending, AttemptsDelta: 1}
	if err := pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{again}}); err != nil {
		return Decision{}, true, err
	}
	e.opt.Faults.Hit(FaultAfterIntent)
	op.Error = ""
	return dispatchOp(ctx, e, tr, pend, it, t, op)
}

// answerSettled finishes the plan items left needs_human whose operations
// a person settled (store.Settler): succeeded → completed, with what the
// tool says of the outcome; failed (settled so before an operation that
// did not happen was dispatched again) → failed, telling the model it did
// not happen. An item whose operation is still needs_human stops the Step:
// only a person moves that on. (One settled as not happened is pending,
// and reconcileAll has dispatched it again before this.)
func answerSettled(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending) (Decision, bool, error) {
	waiting := pl.waiting()
	if len(waiting) == 0 {
		return Decision{}, false, nil
	}
	all, err := e.opt.Store.ListOperations(ctx, e.run.ID, false)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	byItem := make(map[string]run.Operation, len(all))
	for _, op := range all {
		byItem[op.PlanItemID] = op
	}
	for _, it := range waiting {
		op, ok := byItem[it.ID]
		if !ok {
			continue // no operation (a refused call): its recorded answer stands
		}
		switch op.Status {
		case run.OpSucceeded:
			res := tool.Result{Content: fmt.Sprintf("done: a person confirmed that operation %s took effect (external id %q)", op.ID, op.ExternalID)}
			if t, ok := e.tools.get(ctx, op.Tool); ok {
				if eff, ok := t.(tool.Effectful); ok {
					res = guardEffect(e, eff).Describe(op)
					res.Content += " (a person confirmed this outcome)"
				}
			}
			finishItem(pend, tr, it, run.PlanCompleted, res, false)
		case run.OpFailed:
			finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: fmt.Sprintf(
				"not done: operation %s %s. Calling the tool again is a new operation.", op.ID, op.Error)}, true)
		case run.OpNeedsHuman:
			return Decision{Next: NextNeedsHuman, Error: op.Error}, true, nil
		}
	}
	return Decision{}, false, nil
}
