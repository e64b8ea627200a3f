package harness

// Working through the open tool calls of the model's last answer.

import (
	"context"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// runCalls works through the open tool calls in order.
func runCalls(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, ws *runWorkspace, open []model.ToolCall) (Decision, bool, error) {
	for i := 0; i < len(open); i++ {
		it, answered, err := itemFor(ctx, e, tr, pl, pend, open[i])
		if err != nil {
			return Decision{}, true, err
		}
		if answered {
			continue
		}
		t, _ := e.tools.get(ctx, it.Tool)
		if t == nil {
			finishItem(pend, tr, it, run.PlanFailed, tool.Result{Content: "unknown tool " + it.Tool}, true)
			continue
		}
		allowed, d, stop, err := permit(ctx, e, tr, pl, pend, it, t)
		if err != nil || stop {
			return d, stop, err
		}
		if !allowed {
			continue
		}
		if d, stop, err := beforeCall(ctx, e, tr, pl, pend, it, t); err != nil || stop {
			return d, stop, err
		}
		if dt, ok := t.(tool.Delegating); ok {
			if it.Status == run.PlanPending {
				if d, stop, err := startChild(ctx, e, tr, pl, cur, pend, it, dt); err != nil || stop {
					return d, stop, err
				}
			}
			continue // answered by awaitChildren
		}
		n, d, stop, err := call(ctx, e, tr, pl, cur, pend, ws, open[i:], it, t)
		if err != nil || stop {
			return d, stop, err
		}
		i += n - 1
		if e.run.InputPolicy == run.InputInterrupt && i < len(open)-1 {
			started, err := interrupt(ctx, e, tr, pl, pend, open[i+1:])
			if err != nil {
				return Decision{}, true, err
			}
			if started {
				return Decision{}, false, nil
			}
		}
	}
	return awaitChildren(ctx, e, tr, pl, pend)
}

// beforeCall stops the Step before a permitted call: a long tool on a
// bounded worker spills to the long-running task, and a cancel that
// arrived during the model call or between the calls of one answer ends
// the run (cancellation stops new calls).
func beforeCall(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending, it run.PlanItem, t tool.Tool) (Decision, bool, error) {
	if t.Info().Long && e.opt.CanSpill {
		pend.event(run.Event{Type: run.EventRunSpilled, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool)})
		if err := pend.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, true, err
		}
		return Decision{Next: NextSpill}, true, nil
	}
	sig, err := e.opt.Store.RunSignals(ctx, e.run.ID)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	if sig.CancelRequested {
		d, err := cancel(ctx, e, tr, pl, pend)
		return d, true, err
	}
	return Decision{}, false, nil
}

// call runs the call of it, the first of open: an effect alone under the
// operation protocol, a read-only tool together with the read-only calls
// that follow it. n is how many of open it answered.
func call(ctx context.Context, e *env, tr *transcript, pl *plan, cur *cursor, pend *pending, ws *runWorkspace, open []model.ToolCall, it run.PlanItem, t tool.Tool) (n int, d Decision, stop bool, err error) {
	if ctx, err = ws.bind(ctx, cur.workspace); err != nil {
		return 0, Decision{}, true, err
	}
	defer ws.done()
	if eff, ok := t.(tool.Effectful); ok {
		tctx, tsp := e.tel.startTool(ctx, it, true)
		d, stop, err := runEffect(tctx, e, tr, pl, cur, pend, it, guardEffect(e, eff))
		after, _ := pl.get(it.CallID)
		e.tel.endEffect(tctx, tsp, after, err)
		return 1, d, stop, err
	}
	group := []run.PlanItem{it}
	// Under the interrupt policy calls run one by one, so new input can
	// stop the turn between them.
	for j := 1; j < len(open) && e.run.InputPolicy != run.InputInterrupt; j++ {
		nx, ok := pl.get(open[j].ID)
		if !ok || nx.Status != run.PlanPending || nx.Mode != run.ModeSafeReadonly {
			break
		}
		nt, _ := e.tools.get(ctx, nx.Tool)
		_, del := nt.(tool.Delegating)
		if _, eff := nt.(tool.Effectful); eff || del || nt == nil || (nt.Info().Long && e.opt.CanSpill) {
			break
		}
		group = append(group, nx)
	}
	d, stop, err = runReadonly(ctx, e, tr, pl, cur, pend, group)
	return len(group), d, stop, err
}

// interrupt ends the current turn after a tool when input is waiting.
func interrupt(ctx context.Context, e *env, tr *transcript, pl *plan, pend *pending, rest []model.ToolCall) (bool, error) {
	inputs, err := e.opt.Store.ListInputs(ctx, e.run.ID, true)
	if err != nil {
		return false, &RetryableError{Err: err}
	}
	if len(inputs) == 0 {
		return false, nil
	}
	for _, tc := range rest {
		it, ok := pl.get(tc.ID)
		if !ok {
			continue
		}
		finishItem(pend, tr, it, run.PlanSkipped, tool.Result{Content: "skipped: the user sent new input"}, true)
	}
	pend.event(run.Event{Type: run.EventTurnCompleted, Data: jsonObj("interrupted", true)})
	return takeInputs(ctx, e, tr, pend)
}
