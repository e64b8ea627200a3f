package sweeper

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/stepfunctions"
)

// The repairs of a run whose execution waits: a decision whose wake was
// lost, and an approval asked after the run's cancel.

// wakeDecided repairs a lost wake: the run is awaiting_approval, its
// execution runs (waits), and the approval holding the wait's task token
// — the newest one, since each wait attaches its token to the approval it
// asks — was decided or cancelled. The decision is durable; only its
// delivery was lost, so it is delivered again.
func (s *Sweeper) wakeDecided(ctx context.Context, r run.Run, gen int) (Repair, bool, error) {
	rp := Repair{RunID: r.ID}
	if s.Wake == nil || r.Status != run.StatusAwaitingApproval {
		return rp, false, nil
	}
	aps, err := s.Store.ListApprovals(ctx, r.ID)
	if err != nil {
		return rp, false, err
	}
	var last run.Approval
	for _, a := range aps {
		if last.ID == "" || !a.CreatedAt.Before(last.CreatedAt) {
			last = a
		}
	}
	if r.CancelRequested && last.Status == run.ApprovalPending {
		return s.withdraw(ctx, r, gen)
	}
	if last.TaskToken == "" || last.Status == run.ApprovalPending {
		return rp, false, nil
	}
	rp.Found, rp.Action, rp.Execution = FoundDecisionNotDelivered, ActionWoken, stepfunctions.ExecutionName(r.ID, gen)
	rp.Reason = fmt.Sprintf("approval %s is %s but the run still waits on it", last.ID, last.Status)
	if err := s.Wake.Resume(ctx, last); err != nil {
		return rp, true, err
	}
	return rp, true, s.record(ctx, r, rp)
}

// withdraw cancels the approvals of a run asked after its cancel (a
// cancel withdraws every approval pending when it is requested, so any
// pending one came later) and wakes their wait: its Step then ends the
// run cancelled, as the person asked.
func (s *Sweeper) withdraw(ctx context.Context, r run.Run, gen int) (Repair, bool, error) {
	rp := Repair{RunID: r.ID, Found: FoundAskedAfterCancel, Action: ActionCancelled, Execution: stepfunctions.ExecutionName(r.ID, gen)}
	_, cancelled, err := s.Store.RequestCancel(ctx, r.ID, "sweeper")
	if err != nil {
		return rp, true, err
	}
	rp.Reason = fmt.Sprintf("%d approval(s) asked after the run's cancel", len(cancelled))
	for _, a := range cancelled {
		if err := s.Wake.Resume(ctx, a); err != nil {
			return rp, true, err
		}
	}
	return rp, true, s.record(ctx, r, rp)
}
