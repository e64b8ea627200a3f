package run

import (
	"errors"
	"fmt"
)

// Status is where a run stands.
type Status string

// Run statuses. completed, failed and cancelled are final; needs_human is
// final for the runtime but a person may resolve it.
const (
	StatusCreated          Status = "created"
	StatusPlanned          Status = "planned"
	StatusRunning          Status = "running"
	StatusAwaitingApproval Status = "awaiting_approval"
	StatusCompleted        Status = "completed"
	StatusFailed           Status = "failed"
	StatusCancelled        Status = "cancelled"
	StatusNeedsHuman       Status = "needs_human"
)

// ErrIllegalTransition is returned (wrapped) for a status change the table refuses.
var ErrIllegalTransition = errors.New("illegal status transition")

// transitions is the whole life cycle of a run. A status maps to the statuses
// it may move to; staying in the same status is always allowed.
var transitions = map[Status][]Status{
	StatusCreated:          {StatusPlanned, StatusRunning, StatusFailed, StatusCancelled},
	StatusPlanned:          {StatusRunning, StatusAwaitingApproval, StatusFailed, StatusCancelled},
	StatusRunning:          {StatusPlanned, StatusAwaitingApproval, StatusCompleted, StatusFailed, StatusCancelled, StatusNeedsHuman},
	StatusAwaitingApproval: {StatusRunning, StatusFailed, StatusCancelled, StatusNeedsHuman},
	StatusNeedsHuman:       {StatusRunning, StatusFailed, StatusCancelled},
	StatusCompleted:        nil,
	StatusFailed:           nil,
	StatusCancelled:        nil,
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Terminal reports whether no further transition is possible.
func (s Status) Terminal() bool {
	return s.Valid() && len(transitions[s]) == 0
}

// CanTransition reports whether a run may move from s to to. One commit
// may pass through running (created → running → awaiting_approval is one
// step's write), so s → to is allowed when s → running → to is.
func (s Status) CanTransition(to Status) bool {
	if !s.Valid() || !to.Valid() {
		return false
	}
	if s == to || direct(s, to) {
		return true
	}
	return s != StatusRunning && direct(s, StatusRunning) && direct(StatusRunning, to)
}

func direct(from, to Status) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// Transition returns nil when from → to is allowed, and an error wrapping
// ErrIllegalTransition otherwise.
func Transition(from, to Status) error {
	if from.CanTransition(to) {
		return nil
	}
	return fmt.Errorf("%w: %s → %s", ErrIllegalTransition, from, to)
}

// Statuses lists every status, in life-cycle order.
func Statuses() []Status {
	return []Status{StatusCreated, StatusPlanned, StatusRunning, StatusAwaitingApproval,
		StatusCompleted, StatusFailed, StatusCancelled, StatusNeedsHuman}
}
