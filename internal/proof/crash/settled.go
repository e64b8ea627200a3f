package crash

import (
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// The two invariants of issue 34. A destination count cannot see either
// breach: the effect may have happened exactly once, yet a person reading
// the run's status is told something false and may repeat the effect by
// hand, or the run claims an effect no one confirmed.

// ViolationUnsettled and ViolationNeedsHumanMoved begin the violations of
// the two invariants, so reports and soaks can count them.
const (
	ViolationUnsettled       = "ENDED OVER UNSETTLED:"
	ViolationNeedsHumanMoved = "NEEDS_HUMAN MOVED:"
)

// runtimeActors are the "by" values the runtime itself writes. A cancel
// (or any decision) by one of them is not a person's decision.
var runtimeActors = map[string]bool{"": true, "runtime": true, "keel": true, "finalize": true, "sweeper": true, "harness": true}

// personDecision reports whether e records a person's decision about a
// run that waits for one: a cancel asked by someone other than the
// runtime, the settling of an operation (any "*_settled" event by a
// person), or the resolution of a run the version check stopped
// (run_resolved: keel resolve --old-version or --deny).
func personDecision(e api.Event) bool {
	if e.Type != run.EventCancelRequested && e.Type != run.EventRunResolved && !strings.HasSuffix(string(e.Type), "_settled") {
		return false
	}
	by, _ := eventData(e.Data)["by"].(string)
	return !runtimeActors[by]
}

// movedEvents mean the runtime went on with a run: it took the lease,
// called the model, ran a tool, acted on an operation, wrote a checkpoint
// or ended the run. Events the API appends on a person's behalf
// (input_received, cancel_requested, approval_cancelled), the sweeper's
// run_swept and a stale worker's lease_lost are not among them.
var movedEvents = []run.EventType{
	run.EventLeaseAcquired, run.EventTurnStarted, run.EventTurnCompleted,
	run.EventModelCallStarted, run.EventModelCallCompleted, run.EventModelCallFailed,
	run.EventToolStarted, run.EventToolProgress, run.EventToolCompleted, run.EventToolFailed,
	run.EventApprovalRequested, run.EventCheckpointWritten, run.EventBudgetReserved, run.EventBudgetExceeded,
	run.EventRateLimited, run.EventRunSpilled,
	run.EventOpIntent, run.EventOpSucceeded, run.EventOpFailed, run.EventOpReconciled, run.EventOpNeedsHuman, run.EventOpUncertain,
	run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman,
}

// checkSettled: no run ended over an operation it has not settled. A
// completed, failed or cancelled run holds no pending operation (its
// outcome was never learned); a completed one no needs_human operation
// either (it claims an effect no one confirmed); a failed or cancelled one
// a needs_human operation only when a person decided after the operation
// was handed to them.
func checkSettled(ev Evidence, v *Verdict) {
	st := ev.Run.Status
	if st != run.StatusCompleted && st != run.StatusFailed && st != run.StatusCancelled {
		return
	}
	for _, op := range ev.Ops {
		switch {
		case op.Status == run.OpPending:
		case op.Status == run.OpNeedsHuman && st == run.StatusCompleted:
		case op.Status == run.OpNeedsHuman && !decidedAfter(ev.Events, lastOf(ev.Events, run.EventOpNeedsHuman, op.ID)):
		default:
			continue
		}
		v.EndedUnsettled++
		v.fail("%s run %s over operation %s (%s) %s%s", ViolationUnsettled, st, op.ID, op.Tool, op.Status, unsettledWhy(op.Status, st))
	}
}

func unsettledWhy(op run.OpStatus, st run.Status) string {
	switch {
	case op == run.OpPending:
		return ": its outcome was never recorded"
	case st == run.StatusCompleted:
		return ": no one confirmed the effect the run claims"
	}
	return " with no person's decision after its op_needs_human"
}

// lastOf is the seq of the last event of type t about operation opID (0:
// none).
func lastOf(evs []api.Event, t run.EventType, opID string) int64 {
	var seq int64
	for _, e := range evs {
		if e.Type == t && e.OperationID == opID {
			seq = e.Seq
		}
	}
	return seq
}

// decidedAfter reports whether a person decided after seq.
func decidedAfter(evs []api.Event, seq int64) bool {
	return slices.ContainsFunc(evs, func(e api.Event) bool { return e.Seq > seq && personDecision(e) })
}

// checkNeedsHumanWaits: a run that went needs_human waits for a person.
// After each run_needs_human, until a person's decision, no event may say
// the runtime went on. One violation per run_needs_human breached.
func checkNeedsHumanWaits(ev Evidence, v *Verdict) {
	waiting := false
	for _, e := range ev.Events {
		switch {
		case personDecision(e):
			waiting = false
		case waiting && slices.Contains(movedEvents, e.Type):
			// The first such event names the breach; what followed it is
			// its consequence.
			v.NeedsHumanMoved++
			v.fail("%s seq %d %s after run_needs_human with no person's decision in between (run now %s)", ViolationNeedsHumanMoved, e.Seq, e.Type, ev.Run.Status)
			waiting = false
		}
		if e.Type == run.EventRunNeedsHuman {
			waiting = true
		}
	}
}
