package harness

// Reconcile first: every pending operation of the run is settled through
// its destination before the Step does anything else.

import (
	"context"
	"fmt"
	"sort"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// reconcileAll settles every pending operation before the run does anything.
func reconcileAll(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, ws *runWorkspace, from *agentver.Definition) (Decision, bool, error) {
	if pend.status == run.StatusNeedsHuman {
		// Only a person's recorded decision moves it on; the store gives
		// no lease on it, and a run loaded so anyway is not continued.
		return Decision{Next: NextNeedsHuman, Error: e.run.Error}, true, nil
	}
	defer ws.done() // the redispatches' bind
	if skipReconcile {
		return Decision{}, false, nil
	}
	pendingOps, err := e.opt.Store.ListOperations(ctx, e.run.ID, true)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	sort.Slice(pendingOps, func(i, j int) bool { return pendingOps[i].CreatedAt.Before(pendingOps[j].CreatedAt) })
	for _, op := range pendingOps {
		if _, ok := e.tools.delegating(op.Tool); ok {
			if d, stop, err := respawn(ctx, e, pl, pend, op); err != nil || stop {
				return d, stop, err
			}
			continue
		}
		it, eff, ok := pendingOf(ctx, e, pl, op)
		if !ok {
			return needsHuman(ctx, pend, it, op, fmt.Sprintf("pending operation %s: tool %q or its plan item is unknown to this worker", op.ID, op.Tool))
		}
		eff = recordedContract(from, op, guardEffect(e, eff))
		// A redispatch runs the effect's code again, which may read the
		// run's workspace (the file it ships) as the first dispatch did.
		octx, err := ws.bind(ctx, cur.workspace)
		if err != nil {
			return Decision{}, true, err
		}
		if it.Status == run.PlanNeedsHuman {
			// A person established it did not happen (store.SettleNotHappened).
			if d, stop, err := attemptAgain(octx, e, tr, pend, it, eff, op); err != nil || stop {
				return d, stop, err
			}
			continue
		}
		rctx, rsp := e.tel.startOp(octx, op, true)
		verdict, out, rerr := ops.Reconcile(rctx, eff, op)
		e.tel.endReconcile(rctx, rsp, verdict, rerr)
		if rerr != nil && verdict != ops.Failed {
			pend.event(run.Event{Type: run.EventOpUncertain, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", rerr.Error(), "next", "reconcile again")})
			pend.releaseLease()
			if err := pend.flush(ctx, store.Commit{}); err != nil {
				return Decision{}, true, err
			}
			return Decision{Next: NextWait, WaitSeconds: int64(e.opt.RetryWait.Seconds() + 0.999)}, true, nil
		}
		switch verdict {
		case ops.Found, ops.Redispatched:
			extra := int64(0)
			if verdict == ops.Redispatched {
				extra = 1
			}
			opDone(tr, pend, it, eff, op, out, verdict.String(), extra)
			upd := opUpdate(op, out)
			upd.AttemptsDelta = extra
			if err := pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{upd}}); err != nil {
				return Decision{}, true, err
			}
		case ops.Failed:
			pend.event(run.Event{Type: run.EventOpFailed, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", errString(rerr))})
			finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: errString(rerr)}, true)
			if err := pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{{ID: op.ID, Status: run.OpFailed, Error: errString(rerr)}}}); err != nil {
				return Decision{}, true, err
			}
		case ops.NeedsHuman:
			return needsHuman(ctx, pend, it, op, fmt.Sprintf("operation %s at %s may or may not have happened: the destination offers no lookup and no idempotent retry", op.ID, op.Destination))
		}
	}
	// A person may have settled what the run waited on: answer the model
	// with the truth before anything else.
	return answerSettled(ctx, e, tr, pl, pend)
}

// pendingOf is op's plan item and effect; ok is false when this worker
// knows either not.
func pendingOf(ctx context.Context, e *env, pl *plan, op run.Operation) (run.PlanItem, tool.Effectful, bool) {
	it, _ := pl.byID(op.PlanItemID)
	t, _ := e.tools.get(ctx, op.Tool)
	if _, refused := t.(refusedTool); refused {
		// A judgement that failed (a store error): the operation was
		// recorded by an effect, whose contract it carries (recordedContract).
		t, _ = e.tools.unjudged(op.Tool)
	}
	eff, ok := t.(tool.Effectful)
	return it, eff, ok && it.ID != ""
}
