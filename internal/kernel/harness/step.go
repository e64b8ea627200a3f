package harness

import (
	"context"
	"time"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// step is the state of one Step call: the run's identity and what the
// Step reads (env), and the four values a feature works on — the
// transcript, the plan, the cursor and the pending commit — which is all
// it changes. It is thrown away when the Step returns: the next Step
// rebuilds it from the store.
type step struct {
	env
	cache    *runCache
	deadline time.Time

	tr   transcript
	pl   plan
	cur  cursor
	pend pending
	ws   runWorkspace
	// fromDef is the definition the run moved from in this Step: its
	// pending operations are reconciled under its contracts.
	fromDef *agentver.Definition
}

// newStep is the step of run r, leased for a Step by agent until
// deadline, before the run is read.
func newStep(opt *Options, cache *runCache, agent Agent, r run.Run, deadline time.Time) *step {
	s := &step{env: newEnv(opt, agent, r), cache: cache, deadline: deadline, cur: startCursor(r),
		ws: runWorkspace{open: agent.Workspace, runID: r.ID, faults: opt.Faults}}
	s.tr.red = s.red
	s.pend = pending{e: &s.env, tr: &s.tr, pl: &s.pl, cur: &s.cur, ws: &s.ws, token: r.Lease.Token, status: r.Status}
	return s
}

// loop runs iterations until a decision.
func (s *step) loop(ctx context.Context) (Decision, error) {
	if d, stop, err := s.checkVersion(ctx); err != nil || stop {
		return d, err
	}
	if d, stop, err := s.reconcileAll(ctx); err != nil || stop {
		return d, err
	}
	for {
		// One cheap read per iteration sees a cancel request or a lost
		// lease; budget reservations need no refresh, since only this
		// step's own concurrent calls reserve while it holds the lease.
		sig, err := s.pend.signals(ctx)
		if err != nil {
			return Decision{}, &RetryableError{Err: err}
		}
		if sig.LeaseToken != s.pend.token {
			return Decision{}, &FencedError{RunID: s.run.ID}
		}
		s.run.CancelRequested = sig.CancelRequested
		if s.run.CancelRequested {
			return s.cancel(ctx)
		}
		if stopped, err := s.parentStopped(ctx); err != nil || stopped {
			if err != nil {
				return Decision{}, err
			}
			s.run.CancelRequested = true
			return s.cancel(ctx)
		}
		if dl := s.run.Limits.Deadline; !dl.IsZero() && !s.opt.Clock().Before(dl) {
			return s.exceeded(ctx, "deadline", dl.Format("2006-01-02T15:04:05Z07:00"), "")
		}
		if len(s.tr.openCalls()) == 0 {
			d, stop, err := s.callModel(ctx)
			if err != nil || stop {
				return d, err
			}
		}
		if open := s.tr.openCalls(); len(open) > 0 {
			d, stop, err := s.runCalls(ctx, open)
			if err != nil || stop {
				return d, err
			}
		}
		if err := s.pend.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, err
		}
		s.tr.trim(s.cur.msgs, false)
		if !s.opt.Clock().Before(s.deadline) {
			return Decision{Next: NextContinue}, nil
		}
	}
}
