package harness

// A model answer's tool calls become plan items: each validated, judged
// and bound to its exact arguments, or answered at once with why not.

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// itemFor is the plan item of an open call: the run's own, or a new one
// for a call the model made before this run forked or that has none yet.
// answered: the call got its answer here (a result recorded earlier, or
// arguments refused) and runs nothing.
func itemFor(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending, tc model.ToolCall) (it run.PlanItem, answered bool, err error) {
	it, ok := pl.get(tc.ID)
	if !ok {
		if p, ok := pl.recorded(tc.ID); ok {
			// A fork: reuse the recorded result, never repeat the effect.
			return run.PlanItem{}, true, answerRecorded(tr, tc.ID, p)
		}
		it = pl.newItem(e.run.ID, tc)
		t, err := e.tools.forCall(ctx, tc)
		if err == nil {
			if it.ArgsHash, err = run.ArgsHash(tc.Args); err != nil {
				err = fmt.Errorf("%w for %s: %v", tool.ErrInvalidArgs, tc.Name, err)
			}
		}
		if err != nil {
			it.Mode = run.ModeSafeReadonly
			it.Args = invalidArgs(tc.Args)
			finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: err.Error()}, true)
			return run.PlanItem{}, true, nil
		}
		it.Mode = t.Info().Mode
	}
	switch it.Status {
	case run.PlanCompleted, run.PlanFailed, run.PlanDenied, run.PlanSkipped, run.PlanNeedsHuman:
		return run.PlanItem{}, true, answerRecorded(tr, tc.ID, it)
	}
	return it, false, nil
}

// planCalls turns the answer's tool calls into pending plan items; a call
// with invalid arguments is answered at once and never dispatched.
func planCalls(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending, calls []model.ToolCall) {
	for _, tc := range calls {
		it := pl.newItem(e.run.ID, tc)
		t, verr := e.tools.forCall(ctx, tc)
		hash, herr := run.ArgsHash(tc.Args)
		if verr == nil && herr != nil {
			// Arguments the hash cannot bind exactly (a number beyond a
			// double) are refused like invalid ones: an approval of them could
			// cover another action.
			verr = fmt.Errorf("%w for %s: %v", tool.ErrInvalidArgs, tc.Name, herr)
		}
		it.ArgsHash = hash
		if verr != nil {
			// Never dispatched: the model is told what was wrong.
			it.Mode = run.ModeSafeReadonly
			if herr != nil {
				it.Args, it.ArgsHash = invalidArgs(tc.Args), ""
			}
			pend.event(run.Event{Type: run.EventToolFailed, PlanItemID: it.ID, Data: jsonObj("tool", tc.Name, "error", verr.Error(), "dispatched", false)})
			finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: verr.Error()}, true)
			continue
		}
		it.Mode = t.Info().Mode
		pend.item(it)
	}
}
