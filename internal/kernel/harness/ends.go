package harness

// How a Step ends a run or itself: cancelled, over a limit, refused by the
// model, failed before its loop, and the lease released on the way out.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// cancel ends the run: open items are skipped, pending approvals cancelled.
func (s *step) cancel(ctx context.Context) (Decision, error) {
	if err := s.cancelChildren(ctx, "their parent was cancelled"); err != nil {
		return Decision{}, err
	}
	var cancelApprovals []string
	skipped := 0
	for _, tc := range s.tr.openCalls() {
		it, ok := s.pl.get(tc.ID)
		if !ok {
			continue
		}
		if it.Status == run.PlanAwaitingApproval {
			cancelApprovals = append(cancelApprovals, approvalID(it))
			s.tel.approvalClosed(ctx, it.Tool)
		}
		if it.Status == run.PlanPending || it.Status == run.PlanAwaitingApproval {
			finishItem(&s.pend, &s.tr, it, run.PlanSkipped, tool.Result{Content: "skipped: the run was cancelled"}, true)
			skipped++
		}
	}
	s.pend.setStatus(run.StatusCancelled)
	s.pend.releaseLease()
	s.pend.event(run.Event{Type: run.EventRunCancelled, Data: jsonObj("skipped_calls", skipped, "cancelled_approvals", len(cancelApprovals))})
	if err := s.pend.flush(ctx, store.Commit{CancelApprovals: cancelApprovals}); err != nil {
		return Decision{}, err
	}
	return Decision{Next: NextCancelled}, nil
}

// exceeded ends the run failed on a limit; why, when not empty, is added
// to the message (a person stopped a paused run).
func (s *step) exceeded(ctx context.Context, limit string, value any, why string) (Decision, error) {
	msg := fmt.Sprintf("budget exceeded: %s (%v)%s", limit, value, why)
	if err := s.cancelChildren(ctx, "their parent ended: "+msg); err != nil {
		return Decision{}, err
	}
	var closeApprovals []string // a finished run asks nobody anything
	for _, tc := range s.tr.openCalls() {
		if it, ok := s.pl.get(tc.ID); ok && (it.Status == run.PlanPending || it.Status == run.PlanAwaitingApproval) {
			if it.Status == run.PlanAwaitingApproval {
				closeApprovals = append(closeApprovals, approvalID(it))
				s.tel.approvalClosed(ctx, it.Tool)
				s.pend.event(run.Event{Type: run.EventApprovalCancelled, PlanItemID: it.ID, Data: jsonObj("approval_id", approvalID(it), "by", limit)})
			}
			finishItem(&s.pend, &s.tr, it, run.PlanSkipped, tool.Result{Content: "skipped: " + msg}, true)
		}
	}
	data := jsonObj("limit", limit, "value", value)
	if why != "" {
		// Why the run failed rather than paused, or who stopped it.
		data = jsonObj("limit", limit, "value", value, "why", strings.TrimPrefix(why, "; "))
	}
	s.pend.event(run.Event{Type: run.EventBudgetExceeded, Data: data})
	s.pend.event(run.Event{Type: run.EventRunFailed, Data: jsonObj("error", msg)})
	s.pend.setStatus(run.StatusFailed)
	s.pend.setError(msg)
	s.pend.releaseLease()
	if err := s.pend.flush(ctx, store.Commit{CancelApprovals: closeApprovals}); err != nil {
		return Decision{}, err
	}
	return Decision{Next: NextFailed, Error: msg}, nil
}

// modelRefused fails the run at once on a model error that retrying cannot
// fix (a 401, a 400): retrying the step would only repeat it. The
// run_failed event names the provider, the HTTP status and its request id.
func (s *step) modelRefused(ctx context.Context, ce *model.CallError) (Decision, error) {
	msg := "model call refused: " + ce.Error()
	data := map[string]any{"error": msg, "kind": model.AttemptClientError, "provider": ce.Provider, "attempts": len(ce.Attempts)}
	var se *model.StatusError
	if errors.As(ce, &se) {
		data["status"], data["request_id"] = se.Status, se.RequestID
	}
	s.pend.event(run.Event{Type: run.EventModelCallFailed, Data: mustJSON(map[string]any{"error": ce.Error(), "kind": model.AttemptClientError,
		"status": data["status"], "retried": false})})
	s.pend.event(run.Event{Type: run.EventRunFailed, Data: mustJSON(data)})
	s.pend.setStatus(run.StatusFailed)
	s.pend.setError(msg)
	s.pend.releaseLease()
	if err := s.pend.flush(ctx, store.Commit{}); err != nil {
		return Decision{}, err
	}
	return Decision{Next: NextFailed, Error: msg}, nil
}

// fail ends the Step on an error before the loop could start.
func (s *step) fail(_ context.Context, err error) (Decision, error) {
	var fe *FencedError
	if errors.As(err, &fe) {
		return Decision{}, err
	}
	return Decision{}, &RetryableError{Err: err}
}

// finish releases the lease when the Step returns without having done so.
func (s *step) finish(ctx context.Context, d Decision, err error) (Decision, error) {
	var fe *FencedError
	if errors.As(err, &fe) {
		s.log.Warn("step fenced: another worker owns the run; stopping without further writes")
		return Decision{}, err
	}
	if s.pend.token < 0 {
		return d, err
	}
	if !s.pend.empty() {
		s.pend.releaseLease()
		if ferr := s.pend.flush(ctx, store.Commit{}); ferr != nil {
			if errors.As(ferr, &fe) {
				return Decision{}, ferr
			}
			if err == nil {
				err = ferr
			}
		}
		return d, err
	}
	if rerr := s.opt.Store.ReleaseLease(ctx, s.run.ID, s.pend.token); rerr != nil && !errors.Is(rerr, store.ErrFenced) {
		s.log.Warn("lease not released; it will expire", "err", rerr)
	}
	return d, err
}

func specs(r *tool.Registry) []model.ToolSpec {
	var out []model.ToolSpec
	for _, n := range r.Names() {
		t, _ := r.Get(n)
		info := t.Info()
		out = append(out, model.ToolSpec{Name: info.Name, Description: info.Description, Schema: info.Schema})
	}
	return out
}

func jsonObj(kv ...any) json.RawMessage {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return mustJSON(m)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	return b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
