package harness

import (
	"context"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
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
	d, stop, from, err := checkVersion(ctx, &s.env, &s.tr, &s.pl, &s.cur, &s.pend)
	if err != nil || stop {
		return d, err
	}
	if d, stop, err := reconcileAll(ctx, &s.env, &s.tr, &s.pl, &s.cur, &s.pend, &s.ws, from); err != nil || stop {
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
		if sig.CancelRequested {
			return cancel(ctx, &s.env, &s.tr, &s.pl, &s.pend)
		}
		if stopped, err := parentStopped(ctx, &s.env); err != nil || stopped {
			if err != nil {
				return Decision{}, err
			}
			return cancel(ctx, &s.env, &s.tr, &s.pl, &s.pend)
		}
		if dl := s.run.Limits.Deadline; !dl.IsZero() && !s.opt.Clock().Before(dl) {
			return exceeded(ctx, &s.env, &s.tr, &s.pl, &s.pend, "deadline", dl.Format("2006-01-02T15:04:05Z07:00"), "")
		}
		if len(s.tr.openCalls()) == 0 {
			d, stop, err := callModel(ctx, &s.env, &s.tr, &s.pl, &s.cur, &s.pend)
			if err != nil || stop {
				return d, err
			}
		}
		if open := s.tr.openCalls(); len(open) > 0 {
			d, stop, err := runCalls(ctx, &s.env, &s.tr, &s.pl, &s.cur, &s.pend, &s.ws, open)
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

// load rebuilds the run's transcript, plan and cursor from the store, or
// takes them from the cache when nothing was written since this worker's
// last Step of the run.
func (s *step) load(ctx context.Context) error {
	tr, pl, cur, ok := s.cache.resume(&s.env)
	if !ok {
		var err error
		if tr, pl, cur, err = readRun(ctx, &s.env); err != nil {
			s.cur = cur // as far as it was read: the Step's span names its checkpoint
			return err
		}
	}
	s.tr, s.pl, s.cur = tr, pl, cur
	if s.tr.size() == 0 {
		s.tr.add(model.Message{Role: model.RoleUser, Text: s.run.Request})
		s.pend.event(run.Event{Type: run.EventTurnStarted, Data: jsonObj("request_chars", len(s.run.Request))})
	}
	s.tr.setWindow(windowChars(s.agent))
	// A transcript read back whole keeps only its window, like a warm one.
	s.tr.trim(s.cur.msgs, false)
	if s.pend.status == run.StatusCreated || s.pend.status == run.StatusPlanned {
		s.pend.setStatus(run.StatusRunning)
	}
	return nil
}
