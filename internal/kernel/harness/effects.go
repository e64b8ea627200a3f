package harness

// An external effect under the operation protocol: the intent committed
// before dispatch, the outcome committed before the run moves on.

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// runEffect performs an external effect with the operation protocol.
func runEffect(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, it run.PlanItem, t tool.Effectful) (Decision, bool, error) {
	if limit, v := callOver(e, cur, pend, t); limit != "" {
		d, err := atLimit(ctx, e, tr, pl, cur, pend, limit, v)
		return d, true, err
	}
	call := tool.Call{RunID: e.run.ID, PlanItemID: it.ID, CheckpointID: cur.checkpoint, Args: it.Args, Progress: func(int64, int64, string) {}}
	intent, err := t.Intent(ctx, call)
	if err != nil {
		pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool, "error", err.Error(), "dispatched", false)})
		finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: "not dispatched: " + err.Error()}, true)
		return Decision{}, false, nil
	}
	now := e.opt.Clock()
	op := run.Operation{ID: opID(it), RunID: e.run.ID, PlanItemID: it.ID, Tool: it.Tool,
		Destination: t.Name(), Args: it.Args, ArgsHash: it.ArgsHash, ArtifactHash: intent.ArtifactHash, Status: run.OpPending,
		Attempts: 1, CreatedAt: now, UpdatedAt: now}
	op.IdempotencyKey = op.ID
	it.Status = run.PlanRunning
	pend.item(it)
	pend.use(store.Amounts{ToolCalls: 1, SpendMicroUSD: price(t)})
	pend.event(run.Event{Type: run.EventToolStarted, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool)})
	pend.event(run.Event{Type: run.EventOpIntent, PlanItemID: it.ID, OperationID: op.ID, Data: mustJSON(map[string]any{
		"destination": op.Destination, "contract": t.Contract().String(), "args_hash": op.ArgsHash, "artifact_hash": op.ArtifactHash})})
	e.opt.Faults.Hit(FaultBeforeIntent)
	if err := pend.flush(ctx, store.Commit{NewOperations: []run.Operation{op}}); err != nil {
		return Decision{}, true, err
	}
	e.opt.Faults.Hit(FaultAfterIntent)
	return dispatchOp(ctx, e, tr, pend, it, t, op)
}

// dispatchOp dispatches op, whose intent is durable, with its id as the
// idempotency key, and records the outcome before the run moves on: done,
// rejected, or unknown (reconciled later, or handed to a person where the
// destination can neither be asked nor safely retried).
func dispatchOp(ctx context.Context, e *env, tr *transcript, pend *pending, it run.PlanItem, t tool.Effectful, op run.Operation) (Decision, bool, error) {
	dctx, dsp := e.tel.startOp(ctx, op, false)
	out, derr := t.Dispatch(dctx, op)
	e.tel.endDispatch(dctx, dsp, derr)
	e.opt.Faults.Hit(FaultAfterDispatch)
	if derr == nil {
		opDone(tr, pend, it, t, op, out, "dispatched", 0)
		if err := pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{opUpdate(op, out)}}); err != nil {
			return Decision{}, true, err
		}
		e.opt.Faults.Hit(FaultAfterResult)
		return Decision{}, false, nil
	}
	var rej *ops.Rejected
	if errors.As(derr, &rej) {
		pend.event(run.Event{Type: run.EventOpFailed, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", derr.Error())})
		pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool, "error", derr.Error(), "dispatched", true)})
		finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: derr.Error()}, true)
		err := pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{{ID: op.ID, Status: run.OpFailed, Error: derr.Error()}}})
		return Decision{}, err != nil, err
	}
	// The outcome is unknown. Never read that as "nothing happened".
	c := t.Contract()
	if !c.Idempotent && !c.Lookup {
		return needsHuman(ctx, pend, it, op, fmt.Sprintf("dispatch to %s failed with an unknown outcome and the destination can neither be asked nor safely retried: %v", op.Destination, derr))
	}
	pend.event(run.Event{Type: run.EventOpUncertain, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", derr.Error(), "next", "reconcile")})
	if err := pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, true, err
	}
	return Decision{Next: NextWait, WaitSeconds: int64(e.opt.RetryWait.Seconds() + 0.999)}, true, nil
}

func opUpdate(op run.Operation, out ops.Outcome) store.OperationUpdate {
	return store.OperationUpdate{ID: op.ID, Status: run.OpSucceeded, ExternalID: out.ExternalID, Result: out.Result}
}

func opDone(tr *transcript, pend *pending, it run.PlanItem, t tool.Effectful, op run.Operation, out ops.Outcome, how string, extraAttempts int64) {
	op.Status, op.ExternalID, op.Result = run.OpSucceeded, out.ExternalID, out.Result
	op.Attempts += extraAttempts
	typ := run.EventOpSucceeded
	if how != "dispatched" {
		typ = run.EventOpReconciled
	}
	pend.event(run.Event{Type: typ, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("external_id", out.ExternalID, "how", how)})
	pend.event(run.Event{Type: run.EventToolCompleted, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool, "external_id", out.ExternalID)})
	finishItem(pend, tr, it, run.PlanCompleted, t.Describe(op), false)
}
