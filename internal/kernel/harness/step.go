package harness

import (
	"context"
	"time"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// step is the state of one Step call. It is thrown away when the Step
// returns: the next Step rebuilds it from the store.
type step struct {
	env
	cache    *runCache
	token    int64
	deadline time.Time

	tr     transcript
	cur    cursor
	ws     runWorkspace
	pl     plan
	status run.Status

	pend pending
	// fromDef is the definition the run moved from in this Step: its
	// pending operations are reconciled under its contracts.
	fromDef *agentver.Definition
	// fresh holds the run's signals as the last commit left them, when the
	// store reports them (signalCommitter): the next iteration uses them
	// instead of reading its own.
	fresh *store.RunSignals
}

type checkpointState struct {
	Messages []model.Message `json:"messages"`
	// AgentVersion is the version of the Step that wrote the checkpoint,
	// on the first checkpoint of each Step only (it costs bytes per step).
	AgentVersion string `json:"agent_version,omitempty"`
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
		sig, err := s.signals(ctx)
		if err != nil {
			return Decision{}, &RetryableError{Err: err}
		}
		if sig.LeaseToken != s.token {
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
		if err := s.flush(ctx, store.Commit{}); err != nil {
			return Decision{}, err
		}
		s.tr.trim(s.cur.msgs, false)
		if !s.opt.Clock().Before(s.deadline) {
			return Decision{Next: NextContinue}, nil
		}
	}
}
