package crash

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// finalRounds bounds the rounds of next moves a world's end plays to
// bring every run to its end (a research run needs at most a raise, an
// approval and a settle or two, and a resolve or two after a deploy; a
// parent waits for its children's).
const finalRounds = 12

// endWorld brings every run of the world to its end by playing next
// moves, then stops keel dev and holds each run's records — read from
// the store, not the API — to the destination's log: the log tells each
// operation's story, and each operation's status is the destination's
// truth.
func (s *sim) endWorld(ctx context.Context) error {
	w := s.w
	defer func() { s.w = nil }()
	if err := s.playOut(ctx, w); err != nil {
		w.close()
		return err
	}
	pubs, err := s.checkWorld(ctx, w)
	if err != nil {
		w.close()
		return err
	}
	s.sum.Kills += w.kills
	s.sum.Runs += len(w.runs)
	s.sum.Deploys += w.deploys
	for _, r := range w.runs {
		if r.parent != "" {
			s.sum.Children++
		}
	}
	s.sum.Publications += len(pubs)
	fmt.Fprintf(s.log, "world %d ended: %d runs, %d publications, %d kills, %d keel dev starts (%d on another build)\n",
		s.worlds, len(w.runs), len(pubs), w.kills, w.restarts, w.deploys)
	w.close()
	if !w.failed && !s.cfg.Keep {
		_ = os.RemoveAll(w.n.dir)
		if w.n.table != "" {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			_ = s.cfg.AWS.dropWorld(dctx, w.n.table, w.n.bucket)
			cancel()
		}
	} else {
		fmt.Fprintf(s.log, "world kept in %s\n", w.n.dir)
	}
	return nil
}

// playOut plays next moves until every run of w ended (finalRounds at
// most); a run still open after them is a liveness violation.
func (s *sim) playOut(ctx context.Context, w *simWorld) error {
	for range finalRounds {
		if _, err := s.quiesce(ctx, true); err != nil {
			return err
		}
		if err := w.ensure(ctx); err != nil {
			return err
		}
		if err := s.safety(ctx); err != nil {
			return err
		}
		open := 0
		for _, r := range w.live() {
			if !r.abandoned {
				open++
			}
		}
		if open == 0 {
			break
		}
	}
	for _, r := range w.live() {
		if !r.abandoned {
			s.livenessFail(r, "NOT ENDED: after %d rounds of next moves the run is %s", finalRounds, r.status)
		}
	}
	return nil
}

// checkWorld stops w's keel dev and holds every run's records to the
// destination's log; it returns the publications.
func (s *sim) checkWorld(ctx context.Context, w *simWorld) ([]Publication, error) {
	evs := map[*simRun]*Evidence{}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, r := range w.runs {
		ev := &Evidence{}
		if err := w.n.collectAPI(cctx, r.id, ev); err != nil {
			return nil, fmt.Errorf("world's end: run %s: %w", r.id, err)
		}
		evs[r] = ev
	}
	w.n.keel.stop()
	pubs, err := readPublications(w.n.pubLog)
	if err != nil {
		return nil, err
	}
	st, err := w.n.records(ctx)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for r, ev := range evs {
		if ev.Ops, err = st.ListOperations(ctx, r.id, false); err != nil {
			st.Close()
			return nil, fmt.Errorf("operations of %s: %w", r.id, err)
		}
		for _, op := range ev.Ops {
			known[op.ID] = true
		}
	}
	st.Close()
	for r, ev := range evs {
		var v Verdict
		checkLog(*ev, &v)
		checkTruth(*ev, pubs, &v)
		checkCalls(w, *ev, &v)
		for _, msg := range v.Violations {
			s.safetyFail(r, "at the world's end: %s", msg)
		}
	}
	for _, p := range pubs {
		if !known[p.OperationID] {
			s.safetyFail(nil, "at the world's end: the destination holds publication %s for operation %q, which Keel never recorded", p.ID, p.OperationID)
		}
	}
	return pubs, nil
}

// checkTruth holds a run's operations to the destination's log: a
// succeeded operation's publication is there under its id (and Keel
// records its id), a failed one's is not, and a run that ended left none
// pending (a sub-agent call's operation too: checkCalls holds the
// others to the children).
func checkTruth(ev Evidence, pubs []Publication, v *Verdict) {
	byOp := map[string][]Publication{}
	for _, p := range pubs {
		byOp[p.OperationID] = append(byOp[p.OperationID], p)
	}
	for _, op := range ev.Ops {
		at := byOp[op.ID]
		switch {
		case subAgentOp(op) && op.Status != run.OpPending:
		case op.Status == run.OpSucceeded:
			if len(at) == 0 {
				v.fail("operation %s is succeeded but the destination has no publication for it", op.ID)
			} else if op.ExternalID != at[0].ID {
				v.fail("operation %s records external id %s, the destination's publication is %s", op.ID, op.ExternalID, at[0].ID)
			}
		case op.Status == run.OpFailed:
			if len(at) != 0 {
				v.fail("operation %s is failed but the destination holds %d publications for it", op.ID, len(at))
			}
		case op.Status == run.OpPending:
			if ended(ev.Run.Status) {
				v.fail("operation %s left pending by a %s run", op.ID, ev.Run.Status)
			}
		}
	}
}
