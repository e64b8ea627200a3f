package crash

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Expect is what a scenario allows at the end.
type Expect struct {
	// Statuses the run may end in (default: completed).
	Statuses []run.Status
	// Approval: the publication needs an approval, recorded exactly once.
	Approval bool
	// NoEffect: the destination must hold nothing (a cancelled run).
	NoEffect bool
	// Kills is how many SIGKILLs must have happened (a row whose fault
	// point was never reached proves nothing).
	Kills int
	// OpsPerEffect, when set, is how many operations each effect must
	// have in a completed run (the unkilled run's).
	OpsPerEffect map[string]int
	// Unkilled: the run is played with no kill (the program matrix's
	// first run), so a destination that holds none of its succeeded
	// operations lost them with a process that ended normally: it lives
	// in the program's memory, not outside it.
	Unkilled bool
}

// Verdict is the outcome of the invariants on one run.
type Verdict struct {
	Status       run.Status `json:"status"`
	Publications int        `json:"applied"`     // effects the destination received
	Duplicates   int        `json:"duplicates"`  // effects beyond the one the run may cause
	NeedsHuman   bool       `json:"needs_human"` // the run ended needs_human
	OpsTruth     bool       `json:"ops_agree"`   // every operation's status equals the destination's truth
	Gapless      bool       `json:"gapless"`     // the event log is seq 1..n, complete
	// EndedUnsettled counts operations a completed, failed or cancelled
	// run ended over without settling them (ViolationUnsettled).
	EndedUnsettled int `json:"ended_unsettled,omitempty"`
	// NeedsHumanMoved counts run_needs_human events the runtime went on
	// from without a person's decision (ViolationNeedsHumanMoved).
	NeedsHumanMoved int      `json:"needs_human_moved,omitempty"`
	Violations      []string `json:"violations,omitempty"`
	// Unverified are operations whose outcome at the destination could
	// not be checked (a program's effects only; advice.go). A run with
	// any is not a pass, nor a failure.
	Unverified []string `json:"unverified,omitempty"`
	// Advice says what the program's author can do about the violations
	// and the unverified operations, one line per cause.
	Advice []string `json:"advice,omitempty"`
}

func (v *Verdict) fail(format string, a ...any) {
	v.Violations = append(v.Violations, fmt.Sprintf(format, a...))
}

// Check applies the invariants every scenario keeps:
//
//   - the destination holds exactly one publication when the run completed,
//     at most one when it ended needs_human (the destination could not
//     confirm), none when nothing was to be published; never two;
//   - the approval is recorded once (one approval_granted event, one
//     approved approval), and every operation's args hash is the approved
//     one: what was dispatched is what the person saw;
//   - every operation's final status is the destination's truth: succeeded
//     exactly when the destination holds a publication with that operation
//     id (and Keel's external id is that publication), failed only when it
//     holds none, never left pending; and every publication belongs to an
//     operation Keel recorded;
//   - the event log is gapless (seq 1..n, the API says it is complete) and
//     tells what happened: one op_intent per operation, then exactly one of
//     op_succeeded, op_reconciled, op_failed, op_needs_human agreeing with
//     the operation's status, and the run's final event agreeing with its
//     status;
//   - no run ended over an operation it has not settled, and no
//     needs_human run moved without a person's decision (settled.go).
func Check(ev Evidence, x Expect) Verdict {
	v := Verdict{Status: ev.Run.Status, Publications: len(ev.Pubs), NeedsHuman: ev.Run.Status == run.StatusNeedsHuman, OpsTruth: true, Gapless: true}
	statuses := x.Statuses
	if len(statuses) == 0 {
		statuses = []run.Status{run.StatusCompleted}
	}
	if !slices.Contains(statuses, ev.Run.Status) {
		v.fail("run ended %s (error %q), want one of %v", ev.Run.Status, ev.Run.Error, statuses)
	}

	if ev.Observed != nil {
		// A program's own effects, observed through its count hooks and
		// lookups (EffectCounter) instead of the publication log.
		checkEffects(ev, x, &v)
	} else {
		checkPublications(ev, x, &v)
	}
	checkLog(ev, &v)
	checkSettled(ev, &v)
	checkNeedsHumanWaits(ev, &v)
	return v
}

// checkPublications holds the research agent's destination to Keel's
// records: the publication server's log.
func checkPublications(ev Evidence, x Expect, v *Verdict) {
	// Publications.
	if len(ev.Pubs) > 1 {
		v.Duplicates = len(ev.Pubs) - 1
		v.fail("DUPLICATE: the destination received %d publications", len(ev.Pubs))
	}
	switch {
	case x.NoEffect && len(ev.Pubs) != 0:
		v.fail("the destination holds %d publications, want none", len(ev.Pubs))
	case ev.Run.Status == run.StatusCompleted && len(ev.Pubs) != 1:
		v.fail("run completed but the destination holds %d publications, want 1", len(ev.Pubs))
	}

	// Approval of the action; a raise of a limit (keel.raise_limit) is a
	// decision of its own, not an approval of the publication.
	raises := map[string]bool{}
	for _, a := range ev.Approvals {
		if a.Tool == harness.RaiseLimitTool {
			raises[a.ApprovalID] = true
		}
	}
	granted := 0
	for _, e := range ev.Events {
		if e.Type == run.EventApprovalGranted {
			if id, _ := eventData(e.Data)["approval_id"].(string); !raises[id] {
				granted++
			}
		}
	}
	approved := 0
	for _, a := range ev.Approvals {
		if a.Status == run.ApprovalApproved && !raises[a.ApprovalID] {
			approved++
		}
	}
	if x.Approval && (granted != 1 || approved != 1) {
		v.fail("approval recorded %d times (approval_granted events) with %d approved approvals, want once", granted, approved)
	}
	if x.Approval {
		// What was dispatched is exactly what the person approved.
		for _, op := range ev.Ops {
			ok := false
			for _, a := range ev.Approvals {
				ok = ok || (a.Status == run.ApprovalApproved && a.ArgsHash == op.ArgsHash)
			}
			if !ok {
				v.fail("operation %s dispatched args %s that no approved approval covers", op.ID, op.ArgsHash)
			}
		}
	}
	if !x.Approval && granted > 0 {
		v.fail("%d approval_granted events where no approval was to be given", granted)
	}

	// Operations against the destination's truth.
	byOp := map[string][]Publication{}
	for _, p := range ev.Pubs {
		byOp[p.OperationID] = append(byOp[p.OperationID], p)
	}
	known := map[string]run.Operation{}
	for _, op := range ev.Ops {
		known[op.ID] = op
		at := byOp[op.ID]
		switch op.Status {
		case run.OpSucceeded:
			if len(at) == 0 {
				v.OpsTruth = false
				v.fail("operation %s is succeeded but the destination has no publication for it", op.ID)
			} else if op.ExternalID != at[0].ID {
				v.OpsTruth = false
				v.fail("operation %s records external id %s, the destination's publication is %s", op.ID, op.ExternalID, at[0].ID)
			}
		case run.OpFailed:
			if len(at) != 0 {
				v.OpsTruth = false
				v.fail("operation %s is failed but the destination holds %d publications for it", op.ID, len(at))
			}
		case run.OpNeedsHuman:
			// Keel does not know, and says so; the destination may hold
			// it (0 or 1, counted above).
		default:
			v.OpsTruth = false
			v.fail("operation %s left %s", op.ID, op.Status)
		}
	}
	for _, p := range ev.Pubs {
		if _, ok := known[p.OperationID]; !ok {
			v.OpsTruth = false
			v.fail("the destination holds publication %s for operation %q, which Keel never recorded", p.ID, p.OperationID)
		}
	}
	if ev.Run.Status == run.StatusCompleted && !x.NoEffect {
		ok := false
		for _, op := range ev.Ops {
			ok = ok || op.Status == run.OpSucceeded
		}
		if !ok {
			v.fail("run completed without a succeeded operation")
		}
	}

}

// checkLog: the log is gapless and complete, and tells every operation's
// story.
func checkLog(ev Evidence, v *Verdict) {
	known := map[string]run.Operation{}
	for _, op := range ev.Ops {
		known[op.ID] = op
	}
	// The log: gapless and complete.
	for i, e := range ev.Events {
		if e.Seq != int64(i+1) {
			v.Gapless = false
			v.fail("event log gap: position %d has seq %d", i+1, e.Seq)
			break
		}
	}
	if ev.Run.Status.Terminal() && !ev.LogDone {
		// needs_human is not terminal (a person may resume the run), so
		// the API cannot call its log complete; the read reached its end.
		v.Gapless = false
		v.fail("the API does not report the event log of the %s run complete", ev.Run.Status)
	}
	// The log tells the operations' story.
	for _, op := range ev.Ops {
		checkOpStory(op, ev.Events, v)
	}
	for _, e := range ev.Events {
		if e.OperationID != "" {
			if _, ok := known[e.OperationID]; !ok {
				v.fail("event %d (%s) names operation %s, which is not recorded", e.Seq, e.Type, e.OperationID)
			}
		}
	}
	final := map[run.Status]run.EventType{
		run.StatusCompleted:  run.EventRunCompleted,
		run.StatusNeedsHuman: run.EventRunNeedsHuman,
		run.StatusCancelled:  run.EventRunCancelled,
		run.StatusFailed:     run.EventRunFailed,
	}[ev.Run.Status]
	if final != "" && countType(ev.Events, final) == 0 {
		v.fail("run is %s but the log has no %s event", ev.Run.Status, final)
	}
	if n := countType(ev.Events, run.EventRunCompleted); n > 1 {
		v.fail("%d run_completed events", n)
	}
}

func countType(evs []api.Event, t run.EventType) int {
	n := 0
	for _, e := range evs {
		if e.Type == t {
			n++
		}
	}
	return n
}

// startOf is when what e records began: its time, less the duration_us a
// completion carries when its started event was left out.
func startOf(e api.Event) time.Time {
	var d struct {
		DurationUS int64 `json:"duration_us"`
	}
	_ = json.Unmarshal(e.Data, &d)
	return e.Time.Add(-time.Duration(d.DurationUS) * time.Microsecond)
}

// checkOpStory: the log tells op's story. Each attempt is an op_intent
// ended by one outcome event; a person's op_settled after an
// op_needs_human either ends it (happened, give up) or opens the next
// attempt (not happened: one more op_intent, same operation). The last
// word — an outcome, or a settle "happened" — matches the recorded status.
func checkOpStory(op run.Operation, evs []api.Event, v *Verdict) {
	var intents, again int
	var ends []api.Event
	var last api.Event
	for _, e := range evs {
		if e.OperationID != op.ID {
			continue
		}
		switch e.Type {
		case run.EventOpIntent:
			intents++
			if len(ends) < intents-1 {
				v.fail("operation %s: op_intent (seq %d) before the last attempt's outcome", op.ID, e.Seq)
			}
		case run.EventOpSucceeded, run.EventOpReconciled, run.EventOpFailed, run.EventOpNeedsHuman:
			ends = append(ends, e)
			last = e
			if len(ends) > intents {
				v.fail("operation %s: %s (seq %d) before its op_intent", op.ID, e.Type, e.Seq)
			}
		case run.EventOpSettled:
			switch eventData(e.Data)["outcome"] {
			case "not_happened":
				again++
			case "happened":
				last = e
			}
		}
	}
	if intents != 1+again {
		v.fail("operation %s has %d op_intent events, want %d (one, and one per settle \"did not happen\")", op.ID, intents, 1+again)
	}
	if len(ends) != intents {
		v.fail("operation %s has %d outcome events for %d attempts", op.ID, len(ends), intents)
		return
	}
	want := map[run.OpStatus][]run.EventType{
		run.OpSucceeded:  {run.EventOpSucceeded, run.EventOpReconciled, run.EventOpSettled},
		run.OpFailed:     {run.EventOpFailed},
		run.OpNeedsHuman: {run.EventOpNeedsHuman},
	}[op.Status]
	if !slices.Contains(want, last.Type) {
		v.fail("operation %s is %s but the log says %s", op.ID, op.Status, last.Type)
	}
}
