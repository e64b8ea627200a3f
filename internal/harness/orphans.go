package harness

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tool"
)

// closeOrphans adds to c, the commit that fails the run in Finalize, the
// hand-over of each operation still pending to a person. A failed run is
// never stepped again, so nothing would reconcile them: left pending, they
// would promise a reconciliation that cannot happen. The dispatch may or
// may not have reached the destination (the worker stopped between intent
// and result: a panic that escaped, a timeout), so only a person who asks
// the destination can settle it.
func (h *Harness) closeOrphans(ctx context.Context, c *store.Commit) error {
	pending, err := h.opt.Store.ListOperations(ctx, c.RunID, true)
	if err != nil {
		return fmt.Errorf("finalize: pending operations: %w", err)
	}
	if len(pending) == 0 {
		return nil
	}
	items, err := h.opt.Store.ListPlanItems(ctx, c.RunID)
	if err != nil {
		return fmt.Errorf("finalize: plan items: %w", err)
	}
	for _, op := range pending {
		// Three items each, and room left for run_failed.
		if store.CommitItems(c)+4 > store.MaxItemsPerCommit {
			break
		}
		why := fmt.Sprintf("the run failed with operation %s at %s in flight: it may or may not have happened; ask %s for idempotency key %s",
			op.ID, op.Destination, op.Destination, op.IdempotencyKey)
		c.OperationUpdates = append(c.OperationUpdates, store.OperationUpdate{ID: op.ID, Status: run.OpNeedsHuman, Error: why})
		c.Events = append(c.Events, run.Event{Type: run.EventOpNeedsHuman, PlanItemID: op.PlanItemID, OperationID: op.ID,
			Data: jsonObj("reason", why, "by", "finalize")})
		for _, it := range items {
			if it.ID == op.PlanItemID {
				it.Status, it.Result = run.PlanNeedsHuman, recordOf(tool.Result{Content: why}, true)
				c.PlanItems = append(c.PlanItems, it)
			}
		}
	}
	return nil
}
