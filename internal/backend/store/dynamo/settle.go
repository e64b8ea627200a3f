package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// SettleOperation implements store.Settler with one TransactWriteItems: the
// run row (status, error, lease, version), the events, and the operation
// conditioned on still being needs_human, so of two racing settles exactly
// one is applied. The run's next status is decided from a read of its
// operations that the run row's version condition holds: another settle
// of the run moves the version, and this one starts over.
func (s *Store) SettleOperation(ctx context.Context, st store.Settlement) (run.Run, error) {
	if err := store.ValidateSettlement(st); err != nil {
		return run.Run{}, err
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return run.Run{}, err
		}
		it, err := s.readRun(ctx, st.RunID)
		if err != nil {
			return run.Run{}, err
		}
		r := itemToRun(it)
		if r.Status != run.StatusNeedsHuman {
			return run.Run{}, fmt.Errorf("dynamo: settle %q: %w: the run is %s, not needs_human", st.OperationID, store.ErrConflict, r.Status)
		}
		op, others, err := s.settleTarget(ctx, st)
		if err != nil {
			return run.Run{}, err
		}
		next := run.StatusNeedsHuman
		switch {
		case st.Outcome == store.SettleGiveUp:
			next = run.StatusFailed
		case others == 0:
			next = run.StatusRunning
		}
		events, err := store.SettledEvents(st, op.PlanItemID)
		if err != nil {
			return run.Run{}, err
		}
		read := stateOf(it)
		s.remember(st.RunID, read)
		retry, conflict := false, false
		_, after, err := s.appendTx(ctx, "settle", st.RunID, events,
			func(e *expr, u *update) { settleRow(e, u, next, st) },
			func(cur runState, _ bool) error {
				if cur.ver != read.ver {
					retry = true // the run moved since its operations were read
					return errStop
				}
				return nil
			},
			func(runState, int64) ([]types.TransactWriteItem, func(context.Context, int) error) {
				return []types.TransactWriteItem{s.settleOpItem(st)}, func(context.Context, int) error { conflict = true; return errStop }
			})
		switch {
		case conflict:
			return run.Run{}, fmt.Errorf("dynamo: settle %q: %w: the operation was settled meanwhile", st.OperationID, store.ErrConflict)
		case retry:
			continue
		case err != nil:
			return run.Run{}, err
		}
		s.forget(st.RunID) // the cache does not follow status changes made here
		r.Status, r.LastSeq, r.LastHash, r.UpdatedAt = next, after.lastSeq, after.lastHash, s.now()
		if next != run.StatusNeedsHuman {
			r.Error = ""
			if next == run.StatusFailed {
				r.Error = st.Reason
			}
		}
		return r, nil
	}
	return run.Run{}, tooContended("settle", st.RunID)
}

// settleOpItem is the settlement's write of the operation itself, on the
// condition that it is still needs_human (a settlement made meanwhile
// fails it): apart from SettleOperation so that its retry loop reads whole.
func (s *Store) settleOpItem(st store.Settlement) types.TransactWriteItem {
	status, errText := store.SettledOp(st)
	e := newExpr()
	u := &update{set: []string{e.name("status") + " = " + e.value(sv(string(status))),
		e.name("updated_at") + " = " + e.value(tv(s.now()))}}
	if errText != "" {
		u.set = append(u.set, e.name("error")+" = "+e.value(sv(errText)))
	}
	if st.ExternalID != "" {
		u.set = append(u.set, e.name("external_id")+" = "+e.value(sv(st.ExternalID)))
	}
	if len(st.Result) > 0 {
		u.set = append(u.set, e.name("result")+" = "+e.value(bv(st.Result)))
	}
	return s.updateChild(st.RunID, opSK(st.OperationID), e, u,
		e.name("status")+" = "+e.value(sv(string(run.OpNeedsHuman))))
}

// settleTarget reads the operation to settle (ErrNotFound, or ErrConflict
// when it is not needs_human) and counts the run's other needs_human ones.
func (s *Store) settleTarget(ctx context.Context, st store.Settlement) (run.Operation, int, error) {
	items, err := s.children(ctx, st.RunID, "OP#")
	if err != nil {
		return run.Operation{}, 0, err
	}
	var op run.Operation
	found, others := false, 0
	for _, it := range items {
		o := itemToOp(st.RunID, it)
		switch {
		case o.ID == st.OperationID:
			op, found = o, true
		case o.Status == run.OpNeedsHuman:
			others++
		}
	}
	if !found {
		return run.Operation{}, 0, fmt.Errorf("dynamo: settle: operation %q of run %q: %w", st.OperationID, st.RunID, store.ErrNotFound)
	}
	if op.Status != run.OpNeedsHuman {
		return run.Operation{}, 0, fmt.Errorf("dynamo: settle %q: %w: the operation is %s, not needs_human", st.OperationID, store.ErrConflict, op.Status)
	}
	return op, others, nil
}

// settleRow is the run row's part of a settle: its next status and error,
// and no lease (a worker takes it afresh).
func settleRow(e *expr, u *update, next run.Status, st store.Settlement) {
	if next == run.StatusNeedsHuman {
		return
	}
	v := e.value(sv(string(next)))
	u.set = append(u.set, e.name("status")+" = "+v, e.name("g_status")+" = "+v)
	u.clear(e, "lease_owner")
	u.clear(e, "lease_expiry")
	if next == run.StatusFailed {
		u.set = append(u.set, e.name("error")+" = "+e.value(sv(st.Reason)))
	} else {
		u.clear(e, "error")
	}
}
