package crash

// Liveness (issue 40, "every run always has a next move"): at a quiesce
// every run not ended waits for a person, and the person's command its
// records name is accepted and moves it.

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
	resolve  bool           // keel resolve: the version check stopped it
	// child: the run waits on this child run, whose move is its own
	// (played with the child's).
	child *simRun
	why   string
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
		return nextMove{person: true, resolve: true, why: "resolve (the version check stopped it)"}, nil
	case run.StatusRunning, run.StatusCreated:
		if mv, ok, err := w.childMove(ctx, r); ok || err != nil {
			return mv, err
		}
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
// create or fork whose answer a kill took, as a person would find them,
// and child runs.
func (s *sim) adoptAll(ctx context.Context) {
	w := s.w
	for page := ""; ; {
		list, err := w.n.c.ListRuns(ctx, client.ListRunsOptions{Limit: 100, PageToken: page})
		if err != nil {
			return
		}
		for _, r := range list.Runs {
			s.adoptRun(r)
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
		seq, ok, n, err := s.playNext(ctx, r)
		if err != nil {
			return "", err
		}
		played += n
		if ok {
			moved[r] = seq
		}
	}
	for r, seq := range moved {
		if !s.movesAfter(ctx, r, seq) {
			s.livenessFail(r, "NEXT MOVE DID NOT MOVE: its named command was accepted and the run is still %s after %s", r.status, s.quietGuard())
		}
	}
	return fmt.Sprintf("quiet; played %d next moves", played), nil
}

// playNext plays r's next move, if a person's; ok when the run must then
// move past seq (the command was accepted, or the runtime owes the
// move). A run waiting on a child has the child's move, played with it.
// A command whose answer a crash took (keel dev armed at a decision's
// fault point) is retried as a person would, after reading the run's
// records again: they may now name the runtime's move.
func (s *sim) playNext(ctx context.Context, r *simRun) (seq int64, ok bool, played int, err error) {
	w := s.w
	for attempt := 0; attempt < 3; attempt++ {
		if err := w.ensure(ctx); err != nil {
			return 0, false, played, err
		}
		// A hang guard: a resolve may start another build or two.
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		if !w.refresh(cctx, r) || ended(r.status) {
			cancel()
			return 0, false, played, nil
		}
		mv, err := w.nextMove(cctx, r)
		switch {
		case err != nil:
			cancel()
			continue
		case mv.child != nil:
			cancel()
			return 0, false, played, nil
		case !mv.person:
			cancel()
			return r.lastSeq, true, played, nil
		}
		seq := r.lastSeq
		ans, what := s.playMove(cctx, r, mv)
		cancel()
		played++
		fmt.Fprintf(s.log, "  next move of %s (%s): %s: %s\n", r.id, mv.why, what, ans)
		if ans.ok {
			return seq, true, played, nil
		}
		if !ans.lost {
			s.livenessFail(r, "NEXT MOVE REFUSED: the run's named command (%s) answered %s", what, ans)
			return 0, false, played, nil
		}
		fmt.Fprintf(s.log, "  trying again\n")
	}
	return 0, false, played, nil
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
		s.adoptChildren(cctx)
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
	case mv.resolve:
		return s.resolveMove(ctx, r)
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
