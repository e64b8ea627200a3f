package crash

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// maxStarts bounds the incarnations of keel dev in one scenario: a run
// that needs more is not recovering.
const maxStarts = 12

// driveState is what the driver knows of the run it drives.
type driveState struct {
	key      string // the create request's idempotency key
	runID    string
	approved bool // an approval decision was accepted (or found already taken)
	kills    int  // SIGKILLs of keel dev seen (fault points and the suite's own)
	// randomKills are the kills the suite made at a random moment.
	randomKills int
	timerFired  bool // the current incarnation's kill timer fired
	// stopAtKills > 0: return after that many kills, leaving keel dev
	// dead (the two-writer scenarios take over from there).
	stopAtKills int
	cursor      int64     // events already shown to the scenario's onTick
	armedAt     time.Time // when the scenario's trigger was seen
	cancelled   bool
	// decidedAt is when the decision was accepted, or when the current
	// incarnation started if later: from then on the run must leave
	// awaiting_approval.
	decidedAt time.Time
}

// resumeGuard bounds how long an approved run may stay awaiting_approval
// under one keel dev. A hang guard, not a measurement: waking the wait is
// synchronous in the decision request, and the longest legitimate delay
// (a dead incarnation's lease on DynamoDB, then the Step's retry backoff)
// is seconds. A run past it has lost its wakeup: the decision is recorded
// and nothing will ever resume the run. Rows that wait on a task
// heartbeat (idle) are not guarded.
const resumeGuard = time.Minute

// terminal: statuses after which the suite stops driving. needs_human is
// where a run waits for a person; the suite is not one.
func terminal(s run.Status) bool {
	return s == run.StatusCompleted || s == run.StatusFailed || s == run.StatusCancelled || s == run.StatusNeedsHuman
}

// transientError is a failed call to a keel dev that may be dying or
// restarting; the driver tries again at the next tick.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// classify keeps API refusals (4xx) as errors and makes everything else
// (connection refused, 5xx while an incarnation dies) transient.
func classify(what string, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &transientError{fmt.Errorf("%s: %w", what, err)}
}

// classify is the package classify, except that any error is transient
// once this node's keel dev has died: its port may already serve another
// scenario's keel dev (which then answers 401 to our token), and the
// answer is no evidence about this run.
func (n *node) classify(what string, err error) error {
	if n.keel != nil && n.keel.done() {
		return &transientError{fmt.Errorf("%s (keel dev exited): %w", what, err)}
	}
	return classify(what, err)
}

// drive runs keel dev incarnations until the run ends: it creates the run
// (keyed, so a create lost in a crash is repeated safely), approves the
// exact action when asked, restarts keel dev each time it dies, and arms
// each incarnation as the scenario says.
func (n *node) drive(ctx context.Context, st *driveState) error {
	var killTimer <-chan time.Time
	start := func() error {
		var in Incarnation
		if n.starts < len(n.sc.Incarnations) {
			in = n.sc.Incarnations[n.starts]
		}
		killTimer, st.timerFired = nil, false
		if st.approved {
			st.decidedAt = time.Now()
		}
		err := n.startKeel(ctx, in.Fault)
		if err != nil && !errors.Is(err, errExited) {
			return err
		}
		if err == nil && in.KillAfter > 0 {
			killTimer = time.After(in.KillAfter)
		}
		return nil
	}
	if n.keel == nil || n.keel.done() {
		if err := start(); err != nil {
			return err
		}
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	lastOK := time.Now()
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %q did not end (last error: %v): %w", st.runID, lastErr, ctx.Err())
		case <-n.keel.exited:
			if !n.keel.sigkilled() {
				return fmt.Errorf("%s exited without being killed: %v (log %s)", n.keel.name, n.keel.err, n.keel.log)
			}
			st.kills++
			if st.timerFired {
				st.randomKills++
			}
			// Whatever it started (a task child) goes down with it, as
			// on a machine that lost power.
			n.keel.signalGroup(syscall.SIGKILL)
			if st.stopAtKills > 0 && st.kills >= st.stopAtKills {
				return nil
			}
			if n.starts >= maxStarts {
				return fmt.Errorf("run %q: keel dev started %d times without the run ending", st.runID, n.starts)
			}
			if err := start(); err != nil {
				return err
			}
			lastOK = time.Now()
			continue
		case <-killTimer:
			killTimer, st.timerFired = nil, true
			n.keel.signalGroup(syscall.SIGKILL)
			continue
		case <-tick.C:
		}
		if n.c == nil {
			continue
		}
		done, err := n.tick(ctx, st)
		var te *transientError
		switch {
		case err == nil:
			lastOK = time.Now()
		case errors.As(err, &te):
			lastErr = err
			// A hang guard, not a measurement: a live keel dev that
			// answers nothing for this long is broken.
			if !n.keel.done() && time.Since(lastOK) > time.Minute {
				return fmt.Errorf("keel dev alive but failing for a minute: %w", err)
			}
		default:
			return err
		}
		if done {
			return nil
		}
	}
}

func (n *node) tick(ctx context.Context, st *driveState) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if st.runID == "" {
		r, _, err := n.c.CreateRun(cctx, api.CreateRunRequest{Agent: n.cfg.agent(), Input: n.cfg.input()}, st.key)
		if err != nil {
			return false, n.classify("create run", err)
		}
		st.runID = r.RunID
	}
	if n.sc.onTick != nil {
		if err := n.sc.onTick(cctx, n, st); err != nil {
			return false, err
		}
	}
	r, err := n.c.GetRun(cctx, st.runID)
	if err != nil {
		return false, n.classify("get run", err)
	}
	if terminal(r.Status) {
		return true, nil
	}
	if r.Status != run.StatusAwaitingApproval {
		return false, nil
	}
	decided, err := n.approve(cctx, st)
	if err != nil {
		return false, err
	}
	// A dead incarnation's lease may hold the run that long on top.
	if guard := resumeGuard + n.cfg.leaseWait(); !decided && !n.sc.idle && time.Since(st.decidedAt) > guard {
		return false, fmt.Errorf("LOST WAKEUP: the approval was decided (the API accepted it) %s ago and the run is still awaiting_approval",
			time.Since(st.decidedAt).Round(time.Second))
	}
	return false, nil
}

// approve approves the exact action of every pending approval (its args
// hash) and reports whether it decided one. The first time, a decision
// already taken is repeated the same way: that is how a caller whose
// answer was lost in a crash makes sure the run was woken. A run may ask
// for several approvals in turn (a confirm-once tool, then an effect).
func (n *node) approve(ctx context.Context, st *driveState) (bool, error) {
	aps, err := n.c.ListApprovals(ctx, st.runID)
	if err != nil {
		return false, n.classify("list approvals", err)
	}
	decided := false
	for _, a := range aps {
		if a.Status != run.ApprovalPending && (a.Status != run.ApprovalApproved || st.approved) {
			continue
		}
		_, err := n.c.Decide(ctx, st.runID, a.ApprovalID, api.DecisionRequest{Decision: api.DecisionApprove, ArgsHash: a.ArgsHash})
		var ae *api.Error
		if err != nil && !(errors.As(err, &ae) && ae.Code == api.CodeApprovalNotPending) {
			return false, n.classify("approve", err)
		}
		decided = true
	}
	if decided {
		st.approved, st.decidedAt = true, time.Now()
	}
	return decided, nil
}
