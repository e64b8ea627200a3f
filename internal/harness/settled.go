package harness

// A run a person settled: each plan item left needs_human whose operation
// now has an outcome is answered with the truth before the model is
// called again.

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/tool"
)

// answerSettled finishes the plan items left needs_human whose operations
// a person settled (store.Settler): succeeded → completed, with what the
// tool says of the outcome; failed → failed, telling the model it did not
// happen, so a new call is a new operation. An item whose operation is
// still needs_human stops the Step: only a person moves that on.
func (s *step) answerSettled(ctx context.Context) (Decision, bool, error) {
	var waiting []run.PlanItem
	for _, it := range s.items {
		if it.Status == run.PlanNeedsHuman {
			waiting = append(waiting, it)
		}
	}
	if len(waiting) == 0 {
		return Decision{}, false, nil
	}
	all, err := s.h.opt.Store.ListOperations(ctx, s.run.ID, false)
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
			if t, ok := s.agent.Tools.Get(op.Tool); ok {
				if eff, ok := t.(tool.Effectful); ok {
					res = s.guardEffect(eff).Describe(op)
					res.Content += " (a person confirmed this outcome)"
				}
			}
			s.finishItem(it, run.PlanCompleted, res, false)
		case run.OpFailed:
			s.finishItem(it, run.PlanFailed, tool.Result{Content: fmt.Sprintf(
				"not done: operation %s %s. Calling the tool again is a new operation.", op.ID, op.Error)}, true)
		case run.OpNeedsHuman:
			return Decision{Next: NextNeedsHuman, Error: op.Error}, true, nil
		}
	}
	return Decision{}, false, nil
}
