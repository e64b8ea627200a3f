package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// runEffect performs an external effect with the operation protocol.
func (s *step) runEffect(ctx context.Context, it run.PlanItem, t tool.Effectful) (Decision, bool, error) {
	if limit, v := s.callOver(t); limit != "" {
		d, err := s.atLimit(ctx, limit, v)
		return d, true, err
	}
	call := tool.Call{RunID: s.run.ID, PlanItemID: it.ID, CheckpointID: s.cur.checkpoint, Args: it.Args, Progress: func(int64, int64, string) {}}
	intent, err := t.Intent(ctx, call)
	if err != nil {
		s.pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool, "error", err.Error(), "dispatched", false)})
		finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: "not dispatched: " + err.Error()}, true)
		return Decision{}, false, nil
	}
	now := s.opt.Clock()
	op := run.Operation{ID: opID(it), RunID: s.run.ID, PlanItemID: it.ID, Tool: it.Tool,
		Destination: t.Name(), Args: it.Args, ArgsHash: it.ArgsHash, ArtifactHash: intent.ArtifactHash, Status: run.OpPending,
		Attempts: 1, CreatedAt: now, UpdatedAt: now}
	op.IdempotencyKey = op.ID
	it.Status = run.PlanRunning
	s.pend.item(it)
	s.pend.use(store.Amounts{ToolCalls: 1, SpendMicroUSD: price(t)})
	s.pend.event(run.Event{Type: run.EventToolStarted, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool)})
	s.pend.event(run.Event{Type: run.EventOpIntent, PlanItemID: it.ID, OperationID: op.ID, Data: mustJSON(map[string]any{
		"destination": op.Destination, "contract": t.Contract().String(), "args_hash": op.ArgsHash, "artifact_hash": op.ArtifactHash})})
	s.opt.Faults.Hit(FaultBeforeIntent)
	if err := s.pend.flush(ctx, store.Commit{NewOperations: []run.Operation{op}}); err != nil {
		return Decision{}, true, err
	}
	s.opt.Faults.Hit(FaultAfterIntent)
	return s.dispatchOp(ctx, it, t, op)
}

// dispatchOp dispatches op, whose intent is durable, with its id as the
// idempotency key, and records the outcome before the run moves on: done,
// rejected, or unknown (reconciled later, or handed to a person where the
// destination can neither be asked nor safely retried).
func (s *step) dispatchOp(ctx context.Context, it run.PlanItem, t tool.Effectful, op run.Operation) (Decision, bool, error) {
	dctx, dsp := s.tel.startOp(ctx, op, false)
	out, derr := t.Dispatch(dctx, op)
	s.tel.endDispatch(dctx, dsp, derr)
	s.opt.Faults.Hit(FaultAfterDispatch)
	if derr == nil {
		s.opDone(it, t, op, out, "dispatched", 0)
		if err := s.pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{s.opUpdate(op, out)}}); err != nil {
			return Decision{}, true, err
		}
		s.opt.Faults.Hit(FaultAfterResult)
		return Decision{}, false, nil
	}
	var rej *ops.Rejected
	if errors.As(derr, &rej) {
		s.pend.event(run.Event{Type: run.EventOpFailed, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", derr.Error())})
		s.pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool, "error", derr.Error(), "dispatched", true)})
		finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: derr.Error()}, true)
		err := s.pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{{ID: op.ID, Status: run.OpFailed, Error: derr.Error()}}})
		return Decision{}, err != nil, err
	}
	// The outcome is unknown. Never read that as "nothing happened".
	c := t.Contract()
	if !c.Idempotent && !c.Lookup {
		return s.needsHuman(ctx, it, op, fmt.Sprintf("dispatch to %s failed with an unknown outcome and the destination can neither be asked nor safely retried: %v", op.Destination, derr))
	}
	s.pend.event(run.Event{Type: run.EventOpUncertain, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", derr.Error(), "next", "reconcile")})
	if err := s.pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, true, err
	}
	return Decision{Next: NextWait, WaitSeconds: int64(s.opt.RetryWait.Seconds() + 0.999)}, true, nil
}

func (s *step) opUpdate(op run.Operation, out ops.Outcome) store.OperationUpdate {
	return store.OperationUpdate{ID: op.ID, Status: run.OpSucceeded, ExternalID: out.ExternalID, Result: out.Result}
}

func (s *step) opDone(it run.PlanItem, t tool.Effectful, op run.Operation, out ops.Outcome, how string, extraAttempts int64) {
	op.Status, op.ExternalID, op.Result = run.OpSucceeded, out.ExternalID, out.Result
	op.Attempts += extraAttempts
	typ := run.EventOpSucceeded
	if how != "dispatched" {
		typ = run.EventOpReconciled
	}
	s.pend.event(run.Event{Type: typ, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("external_id", out.ExternalID, "how", how)})
	s.pend.event(run.Event{Type: run.EventToolCompleted, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("tool", it.Tool, "external_id", out.ExternalID)})
	finishItem(&s.pend, &s.tr, it, run.PlanCompleted, t.Describe(op), false)
}

func (s *step) needsHuman(ctx context.Context, it run.PlanItem, op run.Operation, why string) (Decision, bool, error) {
	s.pend.event(run.Event{Type: run.EventOpNeedsHuman, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("reason", why)})
	s.pend.event(run.Event{Type: run.EventRunNeedsHuman, Data: jsonObj("operation_id", op.ID, "reason", why)})
	it.Status = run.PlanNeedsHuman
	it.Result = recordOf(tool.Result{Content: why}, true)
	s.pend.item(it)
	s.pend.setStatus(run.StatusNeedsHuman)
	msg := why
	s.pend.setError(msg)
	s.pend.releaseLease()
	upd := store.OperationUpdate{ID: op.ID, Status: run.OpNeedsHuman, Error: why}
	if err := s.pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{upd}}); err != nil {
		return Decision{}, true, err
	}
	return Decision{Next: NextNeedsHuman, Error: why}, true, nil
}

// reconcileAll settles every pending operation before the run does anything.
func (s *step) reconcileAll(ctx context.Context) (Decision, bool, error) {
	if s.pend.status == run.StatusNeedsHuman {
		// Only a person's recorded decision moves it on; the store gives
		// no lease on it, and a run loaded so anyway is not continued.
		return Decision{Next: NextNeedsHuman, Error: s.run.Error}, true, nil
	}
	defer s.ws.done() // the redispatches' toolContext
	if skipReconcile {
		return Decision{}, false, nil
	}
	pendingOps, err := s.opt.Store.ListOperations(ctx, s.run.ID, true)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	sort.Slice(pendingOps, func(i, j int) bool { return pendingOps[i].CreatedAt.Before(pendingOps[j].CreatedAt) })
	for _, op := range pendingOps {
		if _, ok := s.tools.delegating(op.Tool); ok {
			if d, stop, err := s.respawn(ctx, op); err != nil || stop {
				return d, stop, err
			}
			continue
		}
		it, eff, ok := s.pendingOf(ctx, op)
		if !ok {
			return s.needsHuman(ctx, it, op, fmt.Sprintf("pending operation %s: tool %q or its plan item is unknown to this worker", op.ID, op.Tool))
		}
		eff = s.recordedContract(op, guardEffect(&s.env, eff))
		// A redispatch runs the effect's code again, which may read the
		// run's workspace (the file it ships) as the first dispatch did.
		octx, err := s.ws.bind(ctx, s.cur.workspace)
		if err != nil {
			return Decision{}, true, err
		}
		if it.Status == run.PlanNeedsHuman {
			// A person established it did not happen (store.SettleNotHappened).
			if d, stop, err := s.attemptAgain(octx, it, eff, op); err != nil || stop {
				return d, stop, err
			}
			continue
		}
		rctx, rsp := s.tel.startOp(octx, op, true)
		verdict, out, rerr := ops.Reconcile(rctx, eff, op)
		s.tel.endReconcile(rctx, rsp, verdict, rerr)
		if rerr != nil && verdict != ops.Failed {
			s.pend.event(run.Event{Type: run.EventOpUncertain, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", rerr.Error(), "next", "reconcile again")})
			s.pend.releaseLease()
			if err := s.pend.flush(ctx, store.Commit{}); err != nil {
				return Decision{}, true, err
			}
			return Decision{Next: NextWait, WaitSeconds: int64(s.opt.RetryWait.Seconds() + 0.999)}, true, nil
		}
		switch verdict {
		case ops.Found, ops.Redispatched:
			extra := int64(0)
			if verdict == ops.Redispatched {
				extra = 1
			}
			s.opDone(it, eff, op, out, verdict.String(), extra)
			upd := s.opUpdate(op, out)
			upd.AttemptsDelta = extra
			if err := s.pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{upd}}); err != nil {
				return Decision{}, true, err
			}
		case ops.Failed:
			s.pend.event(run.Event{Type: run.EventOpFailed, PlanItemID: it.ID, OperationID: op.ID, Data: jsonObj("error", errString(rerr))})
			finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: errString(rerr)}, true)
			if err := s.pend.flush(ctx, store.Commit{OperationUpdates: []store.OperationUpdate{{ID: op.ID, Status: run.OpFailed, Error: errString(rerr)}}}); err != nil {
				return Decision{}, true, err
			}
		case ops.NeedsHuman:
			return s.needsHuman(ctx, it, op, fmt.Sprintf("operation %s at %s may or may not have happened: the destination offers no lookup and no idempotent retry", op.ID, op.Destination))
		}
	}
	// A person may have settled what the run waited on: answer the model
	// with the truth before anything else.
	return s.answerSettled(ctx)
}

// pendingOf is op's plan item and effect; ok is false when this worker
// knows either not.
func (s *step) pendingOf(ctx context.Context, op run.Operation) (run.PlanItem, tool.Effectful, bool) {
	it, _ := s.pl.byID(op.PlanItemID)
	t, _ := s.tools.get(ctx, op.Tool)
	if _, refused := t.(refusedTool); refused {
		// A judgement that failed (a store error): the operation was
		// recorded by an effect, whose contract it carries (recordedContract).
		t, _ = s.tools.unjudged(op.Tool)
	}
	eff, ok := t.(tool.Effectful)
	return it, eff, ok && it.ID != ""
}
