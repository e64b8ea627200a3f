package api

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Who makes a run's next move (NextMove.Actor).
const (
	// ActorWorker: Keel itself; the run is runnable, or a decision is
	// recorded and its wake is being delivered (the sweeper repairs a
	// lost one).
	ActorWorker = "worker"
	// ActorPerson: a person's command, named in NextMove.Command.
	ActorPerson = "person"
)

// NextMove is who moves a run that has not ended, and how: the liveness
// half of the law of moves (docs/concepts.md). Every run that has not
// ended has one; a person's Command is accepted as it stands.
type NextMove struct {
	Actor string `json:"actor"`
	// Why says what the run waits on.
	Why string `json:"why"`
	// Command is the CLI command that makes the move (for a person), or
	// that follows the run (for a worker); Also are the other moves a
	// person may make instead.
	Command string   `json:"command"`
	Also    []string `json:"also,omitempty"`
}

// nextMove works out rr's next move from its approvals and operations;
// nil for a finished run.
func (s *server) nextMove(ctx context.Context, rr run.Run) (*NextMove, error) {
	cancel := "keel cancel " + rr.ID
	switch rr.Status {
	case run.StatusCompleted, run.StatusFailed, run.StatusCancelled:
		return nil, nil
	case run.StatusNeedsHuman:
		ops, err := s.store.ListOperations(ctx, rr.ID, false)
		if err != nil {
			return nil, err
		}
		for _, op := range ops {
			if op.Status == run.OpNeedsHuman {
				return &NextMove{Actor: ActorPerson,
					Why:     fmt.Sprintf("nobody knows whether operation %s (%s) happened: find out at its destination, then record it", op.ID, op.Tool),
					Command: fmt.Sprintf("keel settle %s %s --happened|--not-happened|--give-up --reason …", rr.ID, op.ID),
					Also:    []string{cancel}}, nil
			}
		}
		return &NextMove{Actor: ActorPerson,
			Why:     "the version check stopped it: finish it under the version that wrote its records, or deny the calls it waits to make",
			Command: fmt.Sprintf("keel resolve %s --old-version|--deny --reason …", rr.ID),
			Also:    []string{cancel}}, nil
	case run.StatusAwaitingApproval:
		aps, err := s.store.ListApprovals(ctx, rr.ID)
		if err != nil {
			return nil, err
		}
		var last run.Approval
		for _, a := range aps {
			if a.Status == run.ApprovalPending && rr.CancelRequested {
				return &NextMove{Actor: ActorWorker,
					Why:     fmt.Sprintf("cancel requested, but approval %s was asked after it: the sweeper withdraws it, as does a repeated cancel", a.ID),
					Command: cancel}, nil
			}
			if a.Status == run.ApprovalPending {
				return pendingMove(rr, a), nil
			}
			if last.ID == "" || !a.CreatedAt.Before(last.CreatedAt) {
				last = a
			}
		}
		if last.ID != "" {
			return &NextMove{Actor: ActorWorker,
				Why: fmt.Sprintf("approval %s is %s: the run is being woken (a wake lost in a crash is delivered by the sweeper, or by repeating the decision)",
					last.ID, last.Status),
				Command: "keel events -f " + rr.ID}, nil
		}
	}
	why := "runnable: a worker steps it"
	if rr.CancelRequested {
		why = "cancel requested: a worker ends it at its next step"
	}
	return &NextMove{Actor: ActorWorker, Why: why, Command: "keel events -f " + rr.ID, Also: []string{cancel}}, nil
}

func pendingMove(rr run.Run, a run.Approval) *NextMove {
	if a.Tool == harness.RaiseLimitTool {
		return &NextMove{Actor: ActorPerson, Why: "the run paused at a limit: raise it by the amount its agent names, or stop it",
			Command: "keel raise " + rr.ID, Also: []string{"keel raise " + rr.ID + " --stop --reason …"}}
	}
	return &NextMove{Actor: ActorPerson, Why: fmt.Sprintf("approval %s of %s waits for a person", a.ID, a.Tool),
		Command: fmt.Sprintf("keel approve %s %s", rr.ID, a.ID),
		Also:    []string{fmt.Sprintf("keel deny %s %s --reason …", rr.ID, a.ID), "keel cancel " + rr.ID}}
}
