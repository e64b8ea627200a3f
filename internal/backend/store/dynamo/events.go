package dynamo

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// appendTx runs one transaction that appends events (and whatever extra
// builds) after the run's last seq, retrying while other writers move the
// run's version. check, when set, may refuse the write from the run's
// state (e.g. ErrTerminal). extra returns the additional actions and a
// function that explains a failure of one of them (nil error = retry).
func (s *Store) appendTx(ctx context.Context, what, runID string, events []run.Event,
	rowSet func(e *expr, u *update),
	check func(st runState, fresh bool) error,
	extra func(st runState, newVer int64) ([]types.TransactWriteItem, func(ctx context.Context, i int) error),
) ([]int64, runState, error) {
	fresh := false
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return nil, runState{}, err
		}
		st, wasRead, err := s.state(ctx, runID, fresh)
		if err != nil {
			return nil, runState{}, err
		}
		fresh = false
		if check != nil {
			if err := check(st, wasRead); err != nil {
				if !wasRead {
					fresh = true
					continue
				}
				return nil, runState{}, err
			}
		}
		now := s.now()
		e := newExpr()
		u := &update{}
		if rowSet != nil {
			rowSet(e, u)
		}
		evs, seqs, head := s.eventPuts(runID, st.lastSeq, st.lastHash, events, now)
		items := []types.TransactWriteItem{s.runRowUpdate(runID, st, len(events), head, now, e, u, nil)}
		items = append(items, evs...)
		var explain func(ctx context.Context, i int) error
		if extra != nil {
			more, ex := extra(st, st.ver+1)
			items = append(items, more...)
			explain = ex
		}
		err = s.transact(ctx, items)
		if err == nil {
			st.ver++
			st.lastSeq += int64(len(events))
			if head != "" {
				st.lastHash = head
			}
			s.remember(runID, st)
			return seqs, st, nil
		}
		f, ok := asTxFailure(err)
		if !ok {
			return nil, runState{}, fmt.Errorf("dynamo: %s on %q: %w", what, runID, err)
		}
		fresh = true
		if f.failed[0] || len(f.failed) == 0 {
			continue
		}
		base := 1 + len(evs)
		for i := range f.failed {
			if i >= base && explain != nil {
				if err := explain(ctx, i-base); err != nil {
					return nil, runState{}, err
				}
			}
		}
	}
	return nil, runState{}, tooContended(what, runID)
}

// AppendEvents implements store.Events with one TransactWriteItems.
func (s *Store) AppendEvents(ctx context.Context, runID string, events []run.Event) ([]int64, error) {
	if err := store.ValidateAppend(runID, events); err != nil {
		return nil, err
	}
	n := 0
	for _, e := range events {
		n += len(e.Data) + 200
	}
	if n > maxTxPayload {
		return nil, invalid("events carry %d bytes, over %d per DynamoDB transaction", n, maxTxPayload)
	}
	seqs, _, err := s.appendTx(ctx, "append events", runID, events, nil, nil, nil)
	return seqs, err
}

// ReadEvents implements store.Events: one Query on the seq range, paged. A
// limit of 0 means store.MaxEventsPerPage; larger limits are capped to it.
func (s *Store) ReadEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Event, error) {
	limit, err := store.ValidatePage(runID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	items, err := s.seqRange(ctx, runID, eventSK(afterSeq+1), eventSK(1<<62), limit)
	if err != nil {
		return nil, err
	}
	var out []run.Event
	for _, it := range items {
		out = append(out, itemToEvent(runID, it))
	}
	if len(out) == 0 {
		if err := s.runExists(ctx, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// seqRange queries up to limit items of a run with from <= sk <= to, in
// order, following pages.
func (s *Store) seqRange(ctx context.Context, runID, from, to string, limit int) ([]item, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table),
		KeyConditionExpression: aws.String(e.name("pk") + " = " + e.value(sv(runPK(runID))) + " AND " +
			e.name("sk") + " BETWEEN " + e.value(sv(from)) + " AND " + e.value(sv(to))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ConsistentRead:            aws.Bool(true),
	}
	var out []item
	for len(out) < limit {
		in.Limit = aws.Int32(int32(limit - len(out)))
		page, err := s.c.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dynamo: query %s: %w", runID, err)
		}
		for _, it := range page.Items {
			out = append(out, item(it))
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	return out, nil
}

// child reads one child item, ErrNotFound when absent.
func (s *Store) child(ctx context.Context, what, runID, id, sk string) (item, error) {
	if err := store.ValidateID("run id", runID); err != nil {
		return nil, err
	}
	if err := store.ValidateID(what+" id", id); err != nil {
		return nil, err
	}
	it, err := s.getItem(ctx, runPK(runID), sk)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, fmt.Errorf("dynamo: %s %q of run %q: %w", what, id, runID, store.ErrNotFound)
	}
	return it, nil
}

// list returns a run's child items with the prefix in insertion order; an
// empty result for an unknown run is ErrNotFound.
func (s *Store) list(ctx context.Context, runID, prefix string) ([]item, error) {
	if err := store.ValidateID("run id", runID); err != nil {
		return nil, err
	}
	items, err := s.children(ctx, runID, prefix)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, s.runExists(ctx, runID)
	}
	byOrd(items)
	return items, nil
}

// ListOperations implements store.Operations, oldest first.
func (s *Store) ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error) {
	items, err := s.list(ctx, runID, "OP#")
	if err != nil {
		return nil, err
	}
	var out []run.Operation
	for _, it := range items {
		op := itemToOp(runID, it)
		if !pendingOnly || op.Status == run.OpPending {
			out = append(out, op)
		}
	}
	return out, nil
}

// GetCheckpoint implements store.Checkpoints: the id pointer, then the
// checkpoint (and its spilled state, if any).
func (s *Store) GetCheckpoint(ctx context.Context, runID, checkpointID string) (run.Checkpoint, error) {
	ptr, err := s.child(ctx, "checkpoint", runID, checkpointID, cpIDSK(checkpointID))
	if err != nil {
		return run.Checkpoint{}, err
	}
	it, err := s.getItem(ctx, runPK(runID), cpSK(ptr.n("seq")))
	if err != nil {
		return run.Checkpoint{}, err
	}
	if it == nil {
		return run.Checkpoint{}, fmt.Errorf("dynamo: checkpoint %q of run %q: %w", checkpointID, runID, store.ErrNotFound)
	}
	return s.itemToCheckpoint(ctx, runID, it)
}

// ListCheckpoints implements store.Checkpoints. A limit of 0 means
// store.MaxEventsPerPage; larger limits are capped to it.
func (s *Store) ListCheckpoints(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Checkpoint, error) {
	limit, err := store.ValidatePage(runID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	items, err := s.seqRange(ctx, runID, cpSK(afterSeq+1), cpSK(1<<62), limit)
	if err != nil {
		return nil, err
	}
	var out []run.Checkpoint
	for _, it := range items {
		cp, err := s.itemToCheckpoint(ctx, runID, it)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	if len(out) == 0 {
		if err := s.runExists(ctx, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ListPlanItems implements store.Checkpoints, in plan order (then id).
func (s *Store) ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error) {
	items, err := s.list(ctx, runID, "PI#")
	if err != nil {
		return nil, err
	}
	var out []run.PlanItem
	for _, it := range items {
		out = append(out, itemToPlanItem(runID, it))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
