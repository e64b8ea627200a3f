package crash

import (
	"context"
	"slices"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// ended: the statuses after which a run never moves again.
func ended(st run.Status) bool {
	return st == run.StatusCompleted || st == run.StatusFailed || st == run.StatusCancelled
}

// safety checks, after a step, what must hold at every moment: the
// destination holds no operation's effect twice; and, for every run not
// ended (keel dev serving), each decision keel accepted stands, no
// needs_human run moved without a person, and a run that ended holds no
// unsettled operation.
func (s *sim) safety(ctx context.Context) error {
	w := s.w
	pubs, err := readPublications(w.n.pubLog)
	if err != nil {
		return err
	}
	byOp := map[string]int{}
	for _, p := range pubs {
		byOp[p.OperationID]++
	}
	for op, n := range byOp {
		if n > 1 && !w.dups[op] {
			w.dups[op] = true
			s.safetyFail(nil, "TWICE: the destination holds %d publications for operation %s", n, op)
		}
	}
	if !w.alive() {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s.adoptChildren(cctx)
	for _, r := range w.live() {
		s.checkRun(cctx, r)
	}
	return nil
}

// refresh reads the run's status and new events; false when keel dev
// did not answer.
func (w *simWorld) refresh(ctx context.Context, r *simRun) bool {
	got, err := w.n.c.GetRun(ctx, r.id)
	if err != nil {
		return false
	}
	r.status = got.Status
	for {
		page, err := w.n.c.Events(ctx, r.id, r.lastSeq, 500)
		if err != nil {
			return false
		}
		if len(page.Events) == 0 {
			r.logDone = page.Done
			break
		}
		r.events = append(r.events, page.Events...)
		r.lastSeq = page.Events[len(page.Events)-1].Seq
		r.movedAt = time.Now()
	}
	return true
}

func (s *sim) checkRun(ctx context.Context, r *simRun) {
	w := s.w
	if !w.refresh(ctx, r) {
		return
	}
	aps, err := w.n.c.ListApprovals(ctx, r.id)
	if err != nil {
		return
	}
	for aid, want := range r.decided {
		i := slices.IndexFunc(aps, func(a api.Approval) bool { return a.ApprovalID == aid })
		switch {
		case i < 0:
			s.safetyFail(r, "DECISION LOST: approval %s, decided %s with a 2xx, is not listed", aid, want)
		case resolvedDenied(aps[i]):
			// A later decision of the person's: resolve --deny.
			r.decided[aid] = run.ApprovalDenied
			continue
		case aps[i].Status != want:
			s.safetyFail(r, "DECISION LOST: approval %s (%s) was decided %s with a 2xx and is now %s", aid, aps[i].Tool, want, aps[i].Status)
		default:
			continue
		}
		delete(r.decided, aid)
	}
	s.checkBlocks(r)
	if n := countEvents(r.events, run.EventRunResolved); n < r.resolves {
		s.safetyFail(r, "DECISION LOST: %d resolutions were answered with a 2xx, the log records %d run_resolved", r.resolves, n)
		r.resolves = n
	}
	var v Verdict
	checkNeedsHumanWaits(Evidence{Events: r.events, Run: api.Run{Status: r.status}}, &v)
	if v.NeedsHumanMoved > r.nhMoved {
		for _, msg := range v.Violations[r.nhMoved:] {
			s.safetyFail(r, "%s", msg)
		}
		r.nhMoved = v.NeedsHumanMoved
	}
	if !ended(r.status) {
		return
	}
	list, err := w.n.c.Operations(ctx, r.id)
	if err != nil {
		return
	}
	var ev Evidence
	ev.Run.Status, ev.Events = r.status, r.events
	for _, op := range list.Operations {
		ev.Ops = append(ev.Ops, run.Operation{ID: op.OperationID, Tool: op.Tool, Status: op.Status})
	}
	v = Verdict{}
	checkSettled(ev, &v)
	for _, msg := range v.Violations {
		s.safetyFail(r, "%s", msg)
	}
	s.checkParent(r)
	r.ended = true
}

func countEvents(evs []api.Event, t run.EventType) int {
	n := 0
	for _, e := range evs {
		if e.Type == t {
			n++
		}
	}
	return n
}
