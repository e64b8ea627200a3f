package harness

// Ending a run outside its loop (Finalize, an unknown agent) without ever
// ending it over an operation whose outcome is unknown, and a Step that
// finds another worker's lease.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// endFailed ends the run leased in r as failed with msg, adding c's
// approvals and events — unless an operation of the run is pending or
// needs_human. Then nobody knows whether its effect happened, and "failed"
// would invite a person to run it again: the run ends needs_human instead,
// its pending operations marked needs_human with msg as the reason, and
// the error names them. The store refuses the failed status in that case
// anyway (store.ErrUnsettled); this decides before asking it.
func endFailed(ctx context.Context, opt *Options, r run.Run, msg, by string, c store.Commit) (Decision, error) {
	unsettled, err := unsettledOps(ctx, opt.Store, r.ID)
	if err != nil {
		_ = opt.Store.ReleaseLease(ctx, r.ID, r.Lease.Token)
		return Decision{}, &RetryableError{Err: err}
	}
	c.RunID, c.Token = r.ID, r.Lease.Token
	failed := jsonObj("error", msg)
	if by != "" {
		failed = jsonObj("error", msg, "by", by)
	}
	if len(unsettled) == 0 {
		c.Run = &store.RunPatch{Status: run.StatusFailed, Error: &msg, ReleaseLease: true}
		c.Events = append(c.Events, run.Event{Type: run.EventRunFailed, Data: failed})
		if _, err := leased(opt, r).send(ctx, c); err != nil {
			return Decision{}, mapStoreErr(r.ID, err)
		}
		return Decision{Next: NextFailed, Error: msg}, nil
	}
	items, err := opt.Store.ListPlanItems(ctx, r.ID)
	if err != nil {
		_ = opt.Store.ReleaseLease(ctx, r.ID, r.Lease.Token)
		return Decision{}, &RetryableError{Err: err}
	}
	var ids []string
	for _, op := range unsettled {
		ids = append(ids, fmt.Sprintf("%s (%s, %s)", op.ID, op.Tool, op.Status))
		// Three items each, and room for the run's own events: the rest
		// stay pending, which the store's refusal still covers, and the
		// run is needs_human either way.
		if op.Status != run.OpPending || store.CommitItems(&c)+5 > store.MaxItemsPerCommit {
			continue
		}
		why := fmt.Sprintf("the run stopped on an error (%s) with operation %s at %s in flight: it may or may not have happened; ask %s for idempotency key %s",
			msg, op.ID, op.Destination, op.Destination, op.IdempotencyKey)
		c.OperationUpdates = append(c.OperationUpdates, store.OperationUpdate{ID: op.ID, Status: run.OpNeedsHuman, Error: why})
		c.Events = append(c.Events, run.Event{Type: run.EventOpNeedsHuman, PlanItemID: op.PlanItemID, OperationID: op.ID,
			Data: jsonObj("reason", why, "by", by)})
		for _, it := range items {
			if it.ID == op.PlanItemID {
				it.Status, it.Result = run.PlanNeedsHuman, recordOf(tool.Result{Content: why}, true)
				it.UpdatedAt = opt.Clock()
				c.PlanItems = append(c.PlanItems, it)
			}
		}
	}
	reason := fmt.Sprintf("%s; not failed, because operation %s has no known outcome: a person must find out whether it happened", msg, strings.Join(ids, ", "))
	c.Run = &store.RunPatch{Status: run.StatusNeedsHuman, Error: &reason, ReleaseLease: true}
	c.Events = append(c.Events, run.Event{Type: run.EventRunNeedsHuman, Data: jsonObj("operation_id", unsettled[0].ID, "reason", reason, "by", by)})
	enqueueNotifications(&c)
	if _, err := leased(opt, r).send(ctx, c); err != nil {
		return Decision{}, mapStoreErr(r.ID, err)
	}
	return Decision{Next: NextNeedsHuman, Error: reason}, nil
}

// unsettledOps lists the run's operations that are pending or needs_human.
func unsettledOps(ctx context.Context, st Store, runID string) ([]run.Operation, error) {
	all, err := st.ListOperations(ctx, runID, false)
	if err != nil {
		return nil, err
	}
	var out []run.Operation
	for _, op := range all {
		if op.Status == run.OpPending || op.Status == run.OpNeedsHuman {
			out = append(out, op)
		}
	}
	return out, nil
}

// busy is the decision of a Step that found another worker's unexpired
// lease: wait until it runs out, then step again. A live worker renews
// nothing (a lease covers one Step), so after that wait either the run
// moved on or the holder died and the lease is free.
func busy(ctx context.Context, opt *Options, runID string, budget time.Duration) Decision {
	wait := opt.LeaseTTL + budget
	if r, err := opt.Store.GetRun(ctx, runID); err == nil && !r.Lease.Expiry.IsZero() {
		wait = r.Lease.Expiry.Sub(opt.Clock())
	}
	secs := int64(wait/time.Second) + 1
	return Decision{Next: NextWait, WaitSeconds: max(secs, 1), Busy: true,
		Error: fmt.Sprintf("lease held by another worker; waiting %ds for it to end", secs)}
}
