package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// ResolveRun implements store.Resolver with one TransactWriteItems: the
// run row (status running, error and lease cleared, version), the events,
// and each approval it changes conditioned on its status as read. What
// changes is decided (store.Resolve) from a read of the run's plan items,
// approvals and operations that the run row's version condition holds:
// anything that moved the run meanwhile (a settle, a decision, a cancel)
// moves the version, and this one starts over.
func (s *Store) ResolveRun(ctx context.Context, res store.Resolution) (run.Run, error) {
	if err := store.ValidateResolution(res); err != nil {
		return run.Run{}, err
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return run.Run{}, err
		}
		it, err := s.readRun(ctx, res.RunID)
		if err != nil {
			return run.Run{}, err
		}
		r := itemToRun(it)
		items, err := s.ListPlanItems(ctx, res.RunID)
		if err != nil {
			return run.Run{}, err
		}
		aps, err := s.ListApprovals(ctx, res.RunID)
		if err != nil {
			return run.Run{}, err
		}
		ops, err := s.ListOperations(ctx, res.RunID, false)
		if err != nil {
			return run.Run{}, err
		}
		now := s.now()
		changed, events, err := store.Resolve(res, r, items, aps, ops, now)
		if err != nil {
			return run.Run{}, fmt.Errorf("dynamo: %w", err)
		}
		read := stateOf(it)
		s.remember(res.RunID, read)
		retry := false
		_, after, err := s.appendTx(ctx, "resolve", res.RunID, events,
			func(e *expr, u *update) {
				v := e.value(sv(string(run.StatusRunning)))
				u.set = append(u.set, e.name("status")+" = "+v, e.name("g_status")+" = "+v)
				u.clear(e, "lease_owner")
				u.clear(e, "lease_expiry")
				u.clear(e, "error")
			},
			func(cur runState, _ bool) error {
				if cur.ver != read.ver {
					retry = true // the run moved since its records were read
					return errStop
				}
				return nil
			},
			func(runState, int64) ([]types.TransactWriteItem, func(context.Context, int) error) {
				return s.resolvedApprovalItems(res.RunID, changed), func(context.Context, int) error { retry = true; return errStop }
			})
		switch {
		case retry:
			continue
		case err != nil:
			return run.Run{}, err
		}
		s.forget(res.RunID) // the cache does not follow status changes made here
		r.Status, r.Error, r.LastSeq, r.LastHash, r.UpdatedAt = run.StatusRunning, "", after.lastSeq, after.lastHash, now
		r.Lease.Owner, r.Lease.Expiry = "", time.Time{}
		return r, nil
	}
	return run.Run{}, tooContended("resolve", res.RunID)
}

// resolvedApprovalItems are the updates of the approvals a resolution
// changes, each conditioned on the status it was read with.
func (s *Store) resolvedApprovalItems(runID string, changed []store.ResolvedApproval) []types.TransactWriteItem {
	var out []types.TransactWriteItem
	for _, c := range changed {
		a := c.Approval
		e := newExpr()
		u := &update{set: []string{
			e.name("status") + " = " + e.value(sv(string(a.Status))),
			e.name("decided_by") + " = " + e.value(sv(a.DecidedBy)),
			e.name("reason") + " = " + e.value(sv(a.Reason)),
			e.name("decided_at") + " = " + e.value(tv(a.DecidedAt))}}
		out = append(out, s.updateChild(runID, approvalSK(a.ID), e, u,
			e.name("status")+" = "+e.value(sv(string(c.From)))))
	}
	return out
}
