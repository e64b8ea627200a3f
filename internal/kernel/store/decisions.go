package store

import (
	"context"
	"encoding/json"

	"github.com/keelrun/keel/internal/kernel/run"
)

// CancelledByPerson is the run_cancelled event a backend's RequestCancel
// appends when it ends a needs_human run: the person's cancel is the
// decision the run waited for, and the log says so ("by" and "decision").
func CancelledByPerson(by string) (run.Event, error) {
	data, err := json.Marshal(map[string]string{"by": by, "decision": "cancel", "from": string(run.StatusNeedsHuman)})
	if err != nil {
		return run.Event{}, err
	}
	return run.Event{Type: run.EventRunCancelled, Data: data}, nil
}

// Settle outcomes: what a person established about a needs_human
// operation.
type SettleOutcome string

const (
	// SettleHappened: the operation took effect (ExternalID is the
	// destination's id for it). It becomes succeeded.
	SettleHappened SettleOutcome = "happened"
	// SettleNotHappened: it did not take effect. It returns to pending,
	// its plan item still needs_human: the next worker records its intent
	// again (attempts+1) and dispatches it once more with the same
	// operation id as idempotency key (harness, settled.go).
	SettleNotHappened SettleOutcome = "not_happened"
	// SettleGiveUp: nobody will find out; the run ends failed with Reason.
	// The operation stays needs_human: its outcome is still unknown.
	SettleGiveUp SettleOutcome = "give_up"
)

// Valid reports whether o is a known outcome.
func (o SettleOutcome) Valid() bool {
	return o == SettleHappened || o == SettleNotHappened || o == SettleGiveUp
}

// Settlement is a person's answer on one needs_human operation.
type Settlement struct {
	RunID, OperationID string
	Outcome            SettleOutcome
	// ExternalID and Result are the destination's, for SettleHappened.
	ExternalID string
	Result     []byte
	// By is who settled it; Reason is what they found out, or why they
	// give up (then also the run's error).
	By, Reason string
}

// NotHappenedPrefix begins the error of an operation a person settled as
// not happened, until its next attempt records an outcome.
const NotHappenedPrefix = "did not happen, as "

// Settler records people's answers on operations only they can settle.
type Settler interface {
	// SettleOperation records s in one write: the operation's new status
	// (SettledOp),
	// an op_settled event naming By, Outcome and Reason (chained like
	// every event), and the run's status: running once no operation of
	// it is needs_human any more (a worker may then take it), failed for
	// SettleGiveUp. ErrConflict when the run is not needs_human (it moved
	// on) or the operation is not needs_human (a second settle racing the
	// first finds it settled: exactly one wins); ErrNotFound for an
	// unknown run or operation; ErrInvalid for a malformed settlement.
	SettleOperation(ctx context.Context, s Settlement) (run.Run, error)
}

// SettledEvents are the events of s, in order: op_settled, and run_failed
// for SettleGiveUp.
func SettledEvents(s Settlement, planItemID string) ([]run.Event, error) {
	data, err := json.Marshal(map[string]string{"by": s.By, "outcome": string(s.Outcome), "reason": s.Reason, "external_id": s.ExternalID})
	if err != nil {
		return nil, err
	}
	evs := []run.Event{{Type: run.EventOpSettled, PlanItemID: planItemID, OperationID: s.OperationID, Data: data}}
	if s.Outcome == SettleGiveUp {
		failed, err := json.Marshal(map[string]string{"by": s.By, "error": s.Reason, "decision": "give_up", "operation_id": s.OperationID})
		if err != nil {
			return nil, err
		}
		evs = append(evs, run.Event{Type: run.EventRunFailed, Data: failed})
	}
	return evs, nil
}

// SettledOp is the status and error the operation takes: succeeded for
// SettleHappened; pending again for SettleNotHappened (to be dispatched
// once more with the same id), its error saying who established that.
func SettledOp(s Settlement) (status run.OpStatus, errText string) {
	switch s.Outcome {
	case SettleHappened:
		return run.OpSucceeded, ""
	case SettleNotHappened:
		return run.OpPending, NotHappenedPrefix + s.By + " established: " + s.Reason
	}
	return run.OpNeedsHuman, "" // give up: still unknown
}
