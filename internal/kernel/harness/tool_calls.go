package harness

// Working through the open tool calls of the model's last answer.

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// runCalls works through the open tool calls in order.
func (s *step) runCalls(ctx context.Context, open []model.ToolCall) (Decision, bool, error) {
	for i := 0; i < len(open); i++ {
		it, answered, err := s.itemFor(ctx, open[i])
		if err != nil {
			return Decision{}, true, err
		}
		if answered {
			continue
		}
		t, _ := s.tools.get(ctx, it.Tool)
		if t == nil {
			finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: "unknown tool " + it.Tool}, true)
			continue
		}
		allowed, d, stop, err := s.permit(ctx, it, t)
		if err != nil || stop {
			return d, stop, err
		}
		if !allowed {
			continue
		}
		if d, stop, err := s.beforeCall(ctx, it, t); err != nil || stop {
			return d, stop, err
		}
		if dt, ok := t.(tool.Delegating); ok {
			if it.Status == run.PlanPending {
				if d, stop, err := s.startChild(ctx, it, dt); err != nil || stop {
					return d, stop, err
				}
			}
			continue // answered by awaitChildren
		}
		n, d, stop, err := s.call(ctx, open[i:], it, t)
		if err != nil || stop {
			return d, stop, err
		}
		i += n - 1
		if s.run.InputPolicy == run.InputInterrupt && i < len(open)-1 {
			started, err := s.interrupt(ctx, open[i+1:])
			if err != nil {
				return Decision{}, true, err
			}
			if started {
				return Decision{}, false, nil
			}
		}
	}
	return s.awaitChildren(ctx)
}

// itemFor is the plan item of an open call: the run's own, or a new one
// for a call the model made before this run forked or that has none yet.
// answered: the call got its answer here (a result recorded earlier, or
// arguments refused) and runs nothing.
func (s *step) itemFor(ctx context.Context, tc model.ToolCall) (it run.PlanItem, answered bool, err error) {
	it, ok := s.pl.get(tc.ID)
	if !ok {
		if p, ok := s.pl.recorded(tc.ID); ok {
			// A fork: reuse the recorded result, never repeat the effect.
			return run.PlanItem{}, true, answerRecorded(&s.tr, tc.ID, p)
		}
		it = s.pl.newItem(s.run.ID, tc)
		t, err := s.tools.forCall(ctx, tc)
		if err == nil {
			if it.ArgsHash, err = run.ArgsHash(tc.Args); err != nil {
				err = fmt.Errorf("%w for %s: %v", tool.ErrInvalidArgs, tc.Name, err)
			}
		}
		if err != nil {
			it.Mode = run.ModeSafeReadonly
			it.Args = invalidArgs(tc.Args)
			finishItem(&s.pend, &s.tr, it, run.PlanFailed, tool.Result{Content: err.Error()}, true)
			return run.PlanItem{}, true, nil
		}
		it.Mode = t.Info().Mode
	}
	switch it.Status {
	case run.PlanCompleted, run.PlanFailed, run.PlanDenied, run.PlanSkipped, run.PlanNeedsHuman:
		return run.PlanItem{}, true, answerRecorded(&s.tr, tc.ID, it)
	}
	return it, false, nil
}

// beforeCall stops the Step before a permitted call: a long tool on a
// bounded worker spills to the long-running task, and a cancel that
// arrived during the model call or between the calls of one answer ends
// the run (cancellation stops new calls).
func (s *step) beforeCall(ctx context.Context, it run.PlanItem, t tool.Tool) (Decision, bool, error) {
	if t.Info().Long && s.opt.CanSpill {
		s.pend.event(run.Event{Type: run.EventRunSpilled, PlanItemID: it.ID, Data: jsonObj("tool", it.Tool)})
		if err := s.pend.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, true, err
		}
		return Decision{Next: NextSpill}, true, nil
	}
	sig, err := s.opt.Store.RunSignals(ctx, s.run.ID)
	if err != nil {
		return Decision{}, true, &RetryableError{Err: err}
	}
	if sig.CancelRequested {
		s.run.CancelRequested = true
		d, err := s.cancel(ctx)
		return d, true, err
	}
	return Decision{}, false, nil
}

// call runs the call of it, the first of open: an effect alone under the
// operation protocol, a read-only tool together with the read-only calls
// that follow it. n is how many of open it answered.
func (s *step) call(ctx context.Context, open []model.ToolCall, it run.PlanItem, t tool.Tool) (n int, d Decision, stop bool, err error) {
	if ctx, err = s.ws.bind(ctx, s.cur.workspace); err != nil {
		return 0, Decision{}, true, err
	}
	defer s.ws.done()
	if eff, ok := t.(tool.Effectful); ok {
		tctx, tsp := s.tel.startTool(ctx, it, true)
		d, stop, err := s.runEffect(tctx, it, guardEffect(&s.env, eff))
		done, _ := s.pl.get(it.CallID)
		s.tel.endEffect(tctx, tsp, done, err)
		return 1, d, stop, err
	}
	group := []run.PlanItem{it}
	// Under the interrupt policy calls run one by one, so new input can
	// stop the turn between them.
	for j := 1; j < len(open) && s.run.InputPolicy != run.InputInterrupt; j++ {
		nx, ok := s.pl.get(open[j].ID)
		if !ok || nx.Status != run.PlanPending || nx.Mode != run.ModeSafeReadonly {
			break
		}
		nt, _ := s.tools.get(ctx, nx.Tool)
		_, del := nt.(tool.Delegating)
		if _, eff := nt.(tool.Effectful); eff || del || nt == nil || (nt.Info().Long && s.opt.CanSpill) {
			break
		}
		group = append(group, nx)
	}
	d, stop, err = s.runReadonly(ctx, group)
	return len(group), d, stop, err
}

// interrupt ends the current turn after a tool when input is waiting.
func (s *step) interrupt(ctx context.Context, rest []model.ToolCall) (bool, error) {
	inputs, err := s.opt.Store.ListInputs(ctx, s.run.ID, true)
	if err != nil {
		return false, &RetryableError{Err: err}
	}
	if len(inputs) == 0 {
		return false, nil
	}
	for _, tc := range rest {
		it, ok := s.pl.get(tc.ID)
		if !ok {
			continue
		}
		finishItem(&s.pend, &s.tr, it, run.PlanSkipped, tool.Result{Content: "skipped: the user sent new input"}, true)
	}
	s.pend.event(run.Event{Type: run.EventTurnCompleted, Data: jsonObj("interrupted", true)})
	return s.takeInputs(ctx)
}
