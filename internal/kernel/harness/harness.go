package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Harness runs Steps. It holds no per-run state between Steps that the
// store does not have: everything it needs is read from the store, so any
// worker can take any run (what it keeps is a cache checked against the
// run's log head, see runCache).
type Harness struct {
	opt   Options
	cache *runCache
}

// New checks the options and fills defaults.
func New(opt Options) (*Harness, error) {
	if opt.Store == nil {
		return nil, errors.New("harness: Store is required")
	}
	if opt.Agents == nil {
		return nil, errors.New("harness: Agents is required")
	}
	if opt.Owner == "" {
		return nil, errors.New("harness: Owner is required")
	}
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = 30 * time.Second
	}
	if opt.ApprovalTimeout <= 0 {
		opt.ApprovalTimeout = 7 * 24 * time.Hour
	}
	if opt.RetryWait <= 0 {
		opt.RetryWait = 5 * time.Second
	}
	if opt.Clock == nil {
		opt.Clock = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Faults == nil {
		opt.Faults = noFaults{}
	}
	if opt.MaxChildDepth <= 0 {
		opt.MaxChildDepth = 3
	}
	if opt.MaxChildFanOut <= 0 {
		opt.MaxChildFanOut = 8
	}
	if opt.ChildPoll <= 0 {
		opt.ChildPoll = 30 * time.Second
	}
	return &Harness{opt: opt, cache: newRunCache(opt.CacheRuns)}, nil
}

// Step runs iterations of one run until a decision point or until budget
// is spent. See the package documentation for the rules it keeps.
func (h *Harness) Step(ctx context.Context, runID string, budget time.Duration) (d Decision, err error) {
	if budget <= 0 {
		budget = 10 * time.Minute
	}
	start := h.opt.Clock()
	r, err := h.opt.Store.AcquireLease(ctx, runID, h.opt.Owner, budget+h.opt.LeaseTTL)
	switch {
	case errors.Is(err, store.ErrLeaseHeld):
		// Contention is never a failure of the run: the state machine
		// waits out the other worker's lease and steps again.
		return busy(ctx, &h.opt, runID, budget), nil
	case errors.Is(err, store.ErrTerminal), errors.Is(err, store.ErrNeedsHuman):
		r, gerr := h.opt.Store.GetRun(ctx, runID)
		if gerr != nil {
			return Decision{}, &RetryableError{Err: gerr}
		}
		return terminalDecision(r), nil
	case errors.Is(err, store.ErrNotFound):
		return Decision{}, fmt.Errorf("step %s: %w", runID, err)
	case err != nil:
		return Decision{}, &RetryableError{Err: err}
	}
	h.opt.Faults.Hit(FaultLeaseHandover)
	var s *step
	ctx, span := startStep(ctx, &h.opt, r, start)
	defer func() {
		cp, red := r.CheckpointID, redactor(nil)
		if s != nil {
			cp, red = s.cur.checkpoint, s.red
		}
		endStep(ctx, h.opt.Telemetry, span, r, cp, red, d, err)
	}()
	agent, err := h.opt.Agents.Agent(r.Agent)
	if err != nil {
		return h.failNow(ctx, r, err.Error())
	}
	s = newStep(&h.opt, h.cache, agent, r, start.Add(budget))
	s.pend.event(run.Event{Type: run.EventLeaseAcquired, Data: leaseData(h.opt.Owner, r.Lease.Token, agent.Version)})
	if err := s.load(ctx); err != nil {
		return failed(err)
	}
	d, err = s.loop(ctx)
	var we *WorkspaceError
	if errors.As(err, &we) {
		// What the tools did is not recorded: the run ends over the last
		// checkpoint, naming why.
		s.pend.drop()
		return endFailed(ctx, &h.opt, s.run, we.Error(), "", store.Commit{})
	}
	d, err = finish(ctx, &s.env, &s.pend, d, err)
	if err == nil {
		s.cache.keep(&s.env, &s.tr, &s.pl, &s.cur, &s.pend)
		if r.Caller.RunID != "" && (d.Next == NextDone || d.Next == NextFailed || d.Next == NextCancelled || d.Next == NextNeedsHuman) {
			h.opt.Faults.Hit(FaultChildFinish)
		}
	}
	return d, err
}

// Finalize makes sure a run that the state machine gave up on ends in a
// final status, recording errMsg; its pending approvals are cancelled in
// the same commit. A run with an operation whose outcome is unknown does
// not end failed (a person reading "failed" would run it again, and the
// effect would happen twice): it ends needs_human naming the operation.
// It is idempotent.
func (h *Harness) Finalize(ctx context.Context, runID, errMsg string) (run.Run, error) {
	r, err := h.opt.Store.GetRun(ctx, runID)
	if err != nil {
		return run.Run{}, err
	}
	if r.Status.Terminal() || r.Status == run.StatusNeedsHuman {
		return r, nil
	}
	if errMsg == "" {
		// A finalize without an error on a live run: leave it alone, it
		// will be stepped again.
		return r, nil
	}
	r, err = h.opt.Store.AcquireLease(ctx, runID, h.opt.Owner, h.opt.LeaseTTL)
	if err != nil {
		if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrNeedsHuman) {
			return h.opt.Store.GetRun(ctx, runID)
		}
		return run.Run{}, &RetryableError{Err: err}
	}
	// A finished run asks nobody anything: its pending approvals are
	// closed in the same write.
	aps, err := h.opt.Store.ListApprovals(ctx, runID)
	if err != nil {
		_ = h.opt.Store.ReleaseLease(ctx, runID, r.Lease.Token)
		return run.Run{}, &RetryableError{Err: err}
	}
	var c store.Commit
	for _, ap := range aps {
		if ap.Status == run.ApprovalPending && len(c.CancelApprovals) < (store.MaxItemsPerCommit-4)/2 {
			c.CancelApprovals = append(c.CancelApprovals, ap.ID)
			c.Events = append(c.Events, run.Event{Type: run.EventApprovalCancelled, PlanItemID: ap.PlanItemID, Data: jsonObj("approval_id", ap.ID, "by", "finalize")})
		}
	}
	d, err := endFailed(ctx, &h.opt, r, errMsg, "finalize", c)
	if err != nil {
		return run.Run{}, err
	}
	runEnded(ctx, h.opt.Telemetry, r, d)
	for i := 0; h.opt.Telemetry != nil && i < len(aps); i++ {
		if slices.Contains(c.CancelApprovals, aps[i].ID) {
			h.opt.Telemetry.ApprovalClosed(ctx, aps[i].Tool)
		}
	}
	return h.opt.Store.GetRun(ctx, runID)
}

func (h *Harness) failNow(ctx context.Context, r run.Run, msg string) (Decision, error) {
	return endFailed(ctx, &h.opt, r, msg, "", store.Commit{})
}

func terminalDecision(r run.Run) Decision {
	switch r.Status {
	case run.StatusCompleted:
		return Decision{Next: NextDone}
	case run.StatusCancelled:
		return Decision{Next: NextCancelled}
	case run.StatusNeedsHuman:
		return Decision{Next: NextNeedsHuman, Error: r.Error}
	default:
		return Decision{Next: NextFailed, Error: r.Error}
	}
}
