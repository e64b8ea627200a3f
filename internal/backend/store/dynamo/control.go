package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func terminalCheck(what, runID string) func(st runState, fresh bool) error {
	return func(st runState, _ bool) error {
		if st.status.Terminal() {
			return fmt.Errorf("dynamo: %s %q: %w (%s)", what, runID, store.ErrTerminal, st.status)
		}
		return nil
	}
}

// RequestCancel implements store.Control in one TransactWriteItems: the
// run row (cancel flag, seq), each pending approval set to cancelled
// (conditioned on still pending) and the events. If an approval is decided
// meanwhile, the write fails and is rebuilt from a fresh read. Asking again,
// with no pending approval left, writes nothing: the run row's version
// condition makes concurrent cancels all but one start over and find the
// flag set.
func (s *Store) RequestCancel(ctx context.Context, runID, by string) (run.Run, []run.Approval, error) {
	if err := store.ValidateCancel(runID, by); err != nil {
		return run.Run{}, nil, err
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return run.Run{}, nil, err
		}
		it, err := s.readRun(ctx, runID)
		if err != nil {
			return run.Run{}, nil, err
		}
		r := itemToRun(it)
		if r.Status.Terminal() {
			return run.Run{}, nil, fmt.Errorf("dynamo: cancel %q: %w (%s)", runID, store.ErrTerminal, r.Status)
		}
		pending, err := s.pendingApprovals(ctx, runID)
		if err != nil {
			return run.Run{}, nil, err
		}
		ends := r.Status == run.StatusNeedsHuman // no worker may take it: the person's cancel ends it here
		if r.CancelRequested && len(pending) == 0 && !ends {
			return r, nil, nil // asked before: nothing new to record
		}
		now := s.now()
		events, err := cancelEvents(by, pending, ends, now)
		if err != nil {
			return run.Run{}, nil, err
		}
		st := stateOf(it)
		s.remember(runID, st)
		moved := false
		_, after, err := s.appendTx(ctx, "cancel", runID, events,
			func(e *expr, u *update) {
				u.set = append(u.set, e.name("cancel")+" = "+e.value(boolv(true)))
				if ends {
					v := e.value(sv(string(run.StatusCancelled)))
					u.set = append(u.set, e.name("status")+" = "+v, e.name("g_status")+" = "+v)
					u.clear(e, "lease_owner")
					u.clear(e, "lease_expiry")
				}
			},
			func(cur runState, _ bool) error {
				if cur.ver != st.ver {
					moved = true // the pending list may be stale: start over
					return errStop
				}
				return nil
			},
			func(runState, int64) ([]types.TransactWriteItem, func(context.Context, int) error) {
				return s.cancelPendingItems(runID, by, pending, now), func(context.Context, int) error { moved = true; return errStop }
			})
		if moved {
			continue
		}
		if err != nil {
			return run.Run{}, nil, err
		}
		r.CancelRequested = true
		if ends {
			r.Status, r.Lease.Owner, r.Lease.Expiry = run.StatusCancelled, "", time.Time{}
			s.forget(runID) // the cache does not follow status changes made here
		}
		r.LastSeq, r.LastHash = after.lastSeq, after.lastHash
		r.UpdatedAt = now
		return r, pending, nil
	}
	return run.Run{}, nil, tooContended("cancel", runID)
}

// pendingApprovals lists the run's approvals that are still pending.
func (s *Store) pendingApprovals(ctx context.Context, runID string) ([]run.Approval, error) {
	all, err := s.ListApprovals(ctx, runID)
	if err != nil {
		return nil, err
	}
	var pending []run.Approval
	for _, a := range all {
		if a.Status == run.ApprovalPending {
			pending = append(pending, a)
		}
	}
	return pending, nil
}

// cancelEvents are the events of a cancel request by by: cancel_requested,
// one approval_cancelled per pending approval (each marked cancelled in
// place, as the caller returns them), and the run's end when ends.
func cancelEvents(by string, pending []run.Approval, ends bool, now time.Time) ([]run.Event, error) {
	data, err := json.Marshal(map[string]string{"by": by})
	if err != nil {
		return nil, err
	}
	events := []run.Event{{Type: run.EventCancelRequested, Data: data}}
	for i := range pending {
		a := &pending[i]
		a.Status, a.DecidedBy, a.Reason, a.DecidedAt = run.ApprovalCancelled, by, "run cancelled", now
		d, err := json.Marshal(map[string]string{"approval_id": a.ID, "by": by})
		if err != nil {
			return nil, err
		}
		events = append(events, run.Event{Type: run.EventApprovalCancelled, PlanItemID: a.PlanItemID, Data: d})
	}
	if ends {
		ev, err := store.CancelledByPerson(by)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// cancelPendingItems are the updates that cancel each pending approval,
// each conditioned on it being pending still.
func (s *Store) cancelPendingItems(runID, by string, pending []run.Approval, now time.Time) []types.TransactWriteItem {
	var items []types.TransactWriteItem
	for _, a := range pending {
		e := newExpr()
		u := &update{set: []string{
			e.name("status") + " = " + e.value(sv(string(run.ApprovalCancelled))),
			e.name("decided_by") + " = " + e.value(sv(by)),
			e.name("reason") + " = " + e.value(sv("run cancelled")),
			e.name("decided_at") + " = " + e.value(tv(now))}}
		items = append(items, s.updateChild(runID, approvalSK(a.ID), e, u,
			e.name("status")+" = "+e.value(sv(string(run.ApprovalPending)))))
	}
	return items
}

// EnqueueInput implements store.Control in one TransactWriteItems: the run
// row (seq; refused when finished), the input and its input_received
// event. The input id is generated here.
func (s *Store) EnqueueInput(ctx context.Context, runID, text string) (run.Input, error) {
	if err := store.ValidateInput(runID, text); err != nil {
		return run.Input{}, err
	}
	in := run.Input{RunID: runID, ID: run.NewID("in"), Text: text}
	data, err := json.Marshal(map[string]any{"input_id": in.ID, "bytes": len(text)})
	if err != nil {
		return run.Input{}, err
	}
	_, _, err = s.appendTx(ctx, "input for", runID, []run.Event{{Type: run.EventInputReceived, Data: data}}, nil,
		terminalCheck("input for", runID),
		func(_ runState, newVer int64) ([]types.TransactWriteItem, func(context.Context, int) error) {
			in.ReceivedAt = s.now()
			return []types.TransactWriteItem{s.putNew(inputItem(in, newVer*1000))}, nil
		})
	if err != nil {
		return run.Input{}, err
	}
	return in, nil
}

// ListInputs implements store.Control, oldest first.
func (s *Store) ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error) {
	items, err := s.list(ctx, runID, "IN#")
	if err != nil {
		return nil, err
	}
	var out []run.Input
	for _, it := range items {
		in := itemToInput(runID, it)
		if !pendingOnly || !in.Consumed {
			out = append(out, in)
		}
	}
	return out, nil
}
