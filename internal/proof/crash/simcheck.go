package crash

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/harness"
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
		case aps[i].Status != want:
			s.safetyFail(r, "DECISION LOST: approval %s (%s) was decided %s with a 2xx and is now %s", aid, aps[i].Tool, want, aps[i].Status)
		default:
			continue
		}
		delete(r.decided, aid)
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
	r.ended = true
}

// The sweeper's cadence in a simulation with short leases
// (KEEL_SWEEP_INTERVAL, KEEL_SWEEP_MIN_AGE); with default leases keel
// dev keeps its own (5m, 1m).
const (
	shortSweepInterval = 5 * time.Second
	shortSweepMinAge   = 3 * time.Second
	keelSweepInterval  = 5 * time.Minute
	keelSweepMinAge    = time.Minute
)

// quietGuard bounds how long a run may take to reach a person's wait or
// its end with keel dev serving: a hang guard, not a measurement (a
// research run takes a fraction of a second), plus what a dead keel
// dev's lease can hold a run on DynamoDB, plus two sweeps that may
// repair a lost wake. On SQLite the sweep at a restart takes every run
// (no minimum age: the data directory is held), so the restart the
// checks allow is a sweep already.
func (s *sim) quietGuard() time.Duration {
	g := 45*time.Second + 2*s.cfg.leaseWait()
	switch {
	case s.cfg.Lease == "short":
		g += 2 * (shortSweepInterval + shortSweepMinAge)
	case s.cfg.Store == "dynamo":
		g += keelSweepInterval + keelSweepMinAge
	}
	return g
}

// nextMove is what moves a run now, from its records: "" for a worker or
// a timer (the runtime owes the move), else the person's command.
type nextMove struct {
	person   bool
	approval *api.Approval  // decide it (approve; a raise through /limits)
	op       *api.Operation // settle it from the destination's log
	why      string
}

func (w *simWorld) nextMove(ctx context.Context, r *simRun) (nextMove, error) {
	switch r.status {
	case run.StatusNeedsHuman:
		list, err := w.n.c.Operations(ctx, r.id)
		if err != nil {
			return nextMove{}, err
		}
		for _, op := range list.Operations {
			if op.Status == run.OpNeedsHuman {
				return nextMove{person: true, op: &op, why: "settle " + op.OperationID}, nil
			}
		}
		return nextMove{person: true, why: "needs_human with no operation to settle"}, nil
	case run.StatusAwaitingApproval:
		aps, err := w.n.c.ListApprovals(ctx, r.id)
		if err != nil {
			return nextMove{}, err
		}
		for _, a := range aps {
			if a.Status == run.ApprovalPending {
				if r.cancelAsked(ctx, w) {
					return nextMove{why: "cancel requested while awaiting " + a.ApprovalID}, nil
				}
				return nextMove{person: true, approval: &a, why: "decide " + a.ApprovalID + " (" + a.Tool + ")"}, nil
			}
		}
		var last string
		for _, a := range aps {
			last = fmt.Sprintf("%s (%s) %s by %s", a.ApprovalID, a.Tool, a.Status, a.DecidedBy)
		}
		return nextMove{why: "awaiting_approval, no approval pending; the last is " + last}, nil
	}
	return nextMove{why: string(r.status)}, nil
}

func (r *simRun) cancelAsked(ctx context.Context, w *simWorld) bool {
	got, err := w.n.c.GetRun(ctx, r.id)
	return err == nil && got.CancelRequested
}

// adoptAll adds the runs keel lists that the simulator does not know: a
// create or fork whose answer a kill took, as a person would find them.
func (s *sim) adoptAll(ctx context.Context) {
	w := s.w
	for page := ""; ; {
		list, err := w.n.c.ListRuns(ctx, client.ListRunsOptions{Limit: 100, PageToken: page})
		if err != nil {
			return
		}
		for _, r := range list.Runs {
			if w.run(r.RunID) == nil {
				w.adopt(r.RunID, api.CreateRunRequest{Agent: r.Agent, Input: r.Input, InputPolicy: r.InputPolicy})
				fmt.Fprintf(s.log, "  adopted %s (%s), which a lost answer had hidden\n", r.RunID, r.Status)
			}
		}
		if page = list.NextPageToken; page == "" {
			return
		}
	}
}

// quiesce is the liveness check: it waits until every run not ended
// waits for a person (keel dev serving; one restart allowed, a sweep
// at start), reports the runs that do not, then plays every waiting
// run's next move — the person's command its records name — and checks
// that keel accepts it and the run moves.
func (s *sim) quiesce(ctx context.Context, final bool) (string, error) {
	w := s.w
	s.adoptAll(ctx)
	owed, err := s.awaitQuiet(ctx)
	if err != nil {
		return "", err
	}
	for r, why := range owed {
		s.livenessFail(r, "STUCK: no one moves the run: %s for %s with keel dev serving (and restarted once)", why, s.quietGuard())
	}
	// The person's commands.
	moved := map[*simRun]int64{}
	played := 0
	for _, r := range w.live() {
		if r.abandoned {
			continue
		}
		// A command whose answer a crash took (keel dev armed at a
		// decision's fault point) is retried as a person would, after
		// reading the run's records again: they may now name the
		// runtime's move.
		for attempt := 0; attempt < 3; attempt++ {
			if err := w.ensure(ctx); err != nil {
				return "", err
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if !w.refresh(cctx, r) || ended(r.status) {
				cancel()
				break
			}
			mv, err := w.nextMove(cctx, r)
			if err != nil {
				cancel()
				continue
			}
			if !mv.person {
				cancel()
				moved[r] = r.lastSeq
				break
			}
			seq := r.lastSeq
			ans, what := s.playMove(cctx, r, mv)
			cancel()
			played++
			if ans.ok {
				moved[r] = seq
				break
			}
			if !ans.lost {
				s.livenessFail(r, "NEXT MOVE REFUSED: the run's named command (%s) answered %s", what, ans)
				break
			}
			fmt.Fprintf(s.log, "  next move of %s (%s): %s; trying again\n", r.id, what, ans)
		}
	}
	for r, seq := range moved {
		if !s.movesAfter(ctx, r, seq) {
			s.livenessFail(r, "NEXT MOVE DID NOT MOVE: its named command was accepted and the run is still %s after %s", r.status, s.quietGuard())
		}
	}
	return fmt.Sprintf("quiet; played %d next moves", played), nil
}

// awaitQuiet waits until every run not ended nor abandoned waits for a
// person, restarting keel dev once when the guard runs out; it returns
// the runs still owed a move by the runtime, and why.
func (s *sim) awaitQuiet(ctx context.Context) (map[*simRun]string, error) {
	w := s.w
	deadline, restarted := time.Now().Add(s.quietGuard()), false
	for {
		if err := w.ensure(ctx); err != nil {
			return nil, err
		}
		owed := map[*simRun]string{}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		for _, r := range w.live() {
			if r.abandoned || !w.refresh(cctx, r) || ended(r.status) {
				continue
			}
			mv, err := w.nextMove(cctx, r)
			if err == nil && !mv.person {
				owed[r] = mv.why
			}
		}
		cancel()
		if len(owed) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) {
			if restarted {
				return owed, nil
			}
			w.n.keel.stop()
			if err := w.start(ctx, ""); err != nil {
				return nil, err
			}
			deadline, restarted = time.Now().Add(s.quietGuard()), true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// playMove executes a run's next move: the person's command.
func (s *sim) playMove(ctx context.Context, r *simRun, mv nextMove) (answer, string) {
	w := s.w
	switch {
	case mv.approval != nil && mv.approval.Tool == harness.RaiseLimitTool:
		_, err := w.n.c.DecideLimit(ctx, r.id, api.LimitDecisionRequest{Decision: api.LimitRaise, Reason: "sim: next move"})
		ans := w.apiAnswer(err)
		s.count("next/limit", ans)
		s.decided(*mv.approval, "limits", api.LimitRaise, ans)
		return ans, "POST /v1/runs/" + r.id + "/limits raise"
	case mv.approval != nil:
		ans := w.decideAPI(ctx, *mv.approval, api.DecisionApprove)
		s.count("next/decide", ans)
		s.decided(*mv.approval, "api", api.DecisionApprove, ans)
		return ans, "POST /v1/runs/" + r.id + "/approvals/" + mv.approval.ApprovalID + " approve"
	case mv.op != nil:
		req, err := w.settleReq(*mv.op, "truth")
		if err != nil {
			return answer{refusal: err.Error()}, "settle"
		}
		ans := w.settle(ctx, "api", *mv.op, req)
		s.count("next/settle", ans)
		return ans, "POST /v1/runs/" + r.id + "/operations/" + mv.op.OperationID + "/settle " + req.Outcome
	}
	return answer{refusal: mv.why}, "no command: " + mv.why
}

// movesAfter waits until the run moves past seq: an event of the
// runtime going on with it, or its end.
func (s *sim) movesAfter(ctx context.Context, r *simRun, seq int64) bool {
	w := s.w
	deadline, restarted := time.Now().Add(s.quietGuard()), false
	for {
		if err := w.ensure(ctx); err != nil {
			return false
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ok := w.refresh(cctx, r)
		cancel()
		if ok {
			if ended(r.status) {
				return true
			}
			for _, e := range r.events {
				if e.Seq > seq && slices.Contains(movedEvents, e.Type) {
					return true
				}
			}
		}
		if time.Now().After(deadline) {
			if restarted {
				return false
			}
			w.n.keel.stop()
			if err := w.start(ctx, ""); err != nil {
				return false
			}
			deadline, restarted = time.Now().Add(s.quietGuard()), true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}
