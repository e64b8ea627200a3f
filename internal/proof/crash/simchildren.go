package crash

// Sub-agent calls (issue 40): a research_lead run hands the research to
// two child runs of the research agent, so kills land between a parent's
// records and its children's. The children are runs of the world like
// any other — their approvals, operations and waits are checked and
// played — adopted as their parent starts them; a sub-agent call starts
// one child at most (no effect twice); a parent that completed answered
// every call from its child's end (or stop for a person); and a parent
// waiting on a child moves when the child does: its next move is the
// child's.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
)

// LeadAgent is the research fixture's agent whose runs call sub-agents
// (RESEARCH_SUBAGENT=on).
const LeadAgent = "research_lead"

// pooled counts the live runs the simulator created or forked (children
// are not counted against the pool).
func (w *simWorld) pooled() int {
	n := 0
	for _, r := range w.live() {
		if r.parent == "" {
			n++
		}
	}
	return n
}

// leads counts the live research_lead runs.
func (w *simWorld) leads() int {
	n := 0
	for _, r := range w.live() {
		if r.req.Agent == LeadAgent {
			n++
		}
	}
	return n
}

// adoptRun adds a run keel lists that the simulator does not know: a
// child run, or a run whose create or fork lost its answer in a kill.
func (s *sim) adoptRun(r api.Run) *simRun {
	w := s.w
	if sr := w.run(r.RunID); sr != nil {
		return sr
	}
	sr := w.adopt(r.RunID, api.CreateRunRequest{Agent: r.Agent, Input: r.Input, InputPolicy: r.InputPolicy})
	if r.Caller != nil && r.Caller.RunID != "" {
		sr.parent, sr.callerOp = r.Caller.RunID, r.Caller.OperationID
		fmt.Fprintf(s.log, "  child %s (%s) of %s, started by its call %s\n", r.RunID, r.Status, sr.parent, sr.callerOp)
	} else {
		fmt.Fprintf(s.log, "  adopted %s (%s), which a lost answer had hidden\n", r.RunID, r.Status)
	}
	return sr
}

// adoptChildren adopts the children of the live parents and checks that
// each sub-agent call started one child at most.
func (s *sim) adoptChildren(ctx context.Context) {
	w := s.w
	for _, p := range w.live() {
		if p.req.Agent != LeadAgent {
			continue
		}
		list, err := w.n.c.ListRuns(ctx, client.ListRunsOptions{Parent: p.id, Limit: 100})
		if err != nil {
			continue
		}
		byOp := map[string][]string{}
		for _, c := range list.Runs {
			s.adoptRun(c)
			if c.Caller != nil {
				byOp[c.Caller.OperationID] = append(byOp[c.Caller.OperationID], c.RunID)
			}
		}
		for op, ids := range byOp {
			if len(ids) > 1 && !w.dups[op] {
				w.dups[op] = true
				s.safetyFail(p, "TWICE: sub-agent call %s started %d child runs: %s", op, len(ids), strings.Join(ids, ", "))
			}
		}
	}
}

// errNoAnswer: keel dev did not answer a read.
var errNoAnswer = errors.New("keel dev did not answer")

// childMove is the next move of a parent run that waits on a child (not
// ended, not needs_human: a sub-agent call is answered when its child
// ends or stops for a person): the child's. ok is false when r waits on
// no child.
func (w *simWorld) childMove(ctx context.Context, r *simRun) (mv nextMove, ok bool, err error) {
	for _, c := range w.runs {
		if c.parent != r.id {
			continue
		}
		if !w.refresh(ctx, c) {
			return nextMove{}, false, errNoAnswer
		}
		if ended(c.status) || c.status == run.StatusNeedsHuman {
			continue
		}
		mv, err := w.nextMove(ctx, c)
		if err != nil {
			return nextMove{}, false, err
		}
		mv.why = "waits on child " + c.id + ": " + mv.why
		mv.child = c
		return mv, true, nil
	}
	return nextMove{}, false, nil
}

// checkParent: a parent that completed answered each of its sub-agent
// calls from its child's end, or its stop for a person (child_ended):
// none of its children was still going unseen. (A child stopped for a
// person may go on after its parent completed, when a person moves it.)
func (s *sim) checkParent(p *simRun) {
	if p.status != run.StatusCompleted {
		return
	}
	answered := map[string]bool{}
	for _, e := range p.events {
		if e.Type == run.EventChildEnded {
			answered[e.OperationID] = true
		}
	}
	for _, c := range s.w.runs {
		if c.parent == p.id && !answered[c.callerOp] {
			s.safetyFail(p, "ENDED BEFORE ITS CHILD: the run completed and its log answers no call %s from its child %s (%s)", c.callerOp, c.id, c.status)
		}
	}
}

// subAgentOp: op starts a sub-agent call's child run.
func subAgentOp(op run.Operation) bool { return strings.HasPrefix(op.Destination, "subagent:") }

// checkCalls holds a run's sub-agent calls to its children, at the
// world's end: a call's operation that succeeded names, as its external
// id, the child run that call started.
func checkCalls(w *simWorld, ev Evidence, v *Verdict) {
	for _, op := range ev.Ops {
		if !subAgentOp(op) || op.Status != run.OpSucceeded {
			continue
		}
		if c := w.run(op.ExternalID); c == nil || c.callerOp != op.ID {
			v.fail("sub-agent call %s succeeded with child %q, which is no run that call started", op.ID, op.ExternalID)
		}
	}
}
