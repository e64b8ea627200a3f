package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Store is what the harness needs from storage.
type Store interface {
	GetRun(ctx context.Context, id string) (run.Run, error)
	store.Leases
	store.Committer // every write of a Step: there is no unfenced append
	store.Operations
	GetApproval(ctx context.Context, runID, approvalID string) (run.Approval, error)
	ListApprovals(ctx context.Context, runID string) ([]run.Approval, error)
	HasGrant(ctx context.Context, sessionID, tool string) (bool, error)
	Reserve(ctx context.Context, runID string, r store.Amounts) (run.Budget, error)
	ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error)
	store.Checkpoints
	store.Signals
}

// Agent is what a run executes: a model, a system prompt and tools.
type Agent struct {
	Name      string
	System    string
	Model     model.Model
	Tools     *tool.Registry
	MaxTokens int
	// ContextTokens is the agent's context window, in tokens as the
	// harness estimates them (four characters a token): each model call is
	// sent the transcript's first message and the longest recent tail
	// that fits it with System and MaxTokens, and a worker keeps no more
	// of a run's transcript than that between calls (the store keeps all
	// of it). Zero: 100,000.
	ContextTokens int
	// Provider and ModelName name the model on spans and metrics
	// (gen_ai.provider.name, gen_ai.request.model); empty: unknown.
	Provider, ModelName string
	// Workspace opens a run's workspace; nil: the agent's tools have none.
	Workspace Workspaces
	// OnLimit says whether a run at a limit fails (the zero value) or
	// pauses for a person to raise it.
	OnLimit LimitPolicy
	// Version is the agent's version (agentver.Definition.Version) and
	// Definition what it hashes; empty: no version check (a run's records
	// are taken as they are). Policy is Pin or Upgrade (empty: Upgrade).
	Version    string
	Definition *agentver.Definition
	Policy     agentver.Policy
}

// Agents resolves an agent by the name stored on the run.
type Agents interface {
	Agent(name string) (Agent, error)
}

// AgentMap is a fixed set of agents.
type AgentMap map[string]Agent

// Agent implements Agents.
func (m AgentMap) Agent(name string) (Agent, error) {
	a, ok := m[name]
	if !ok {
		return Agent{}, fmt.Errorf("%w %q", ErrUnknownAgent, name)
	}
	return a, nil
}

// FaultPoints lets the crash suite stop the process at named lines of the
// protocol. Hit is called at each point; the production value does nothing.
type FaultPoints interface {
	Hit(name string)
}

// Fault point names, in protocol order.
const (
	FaultBeforeIntent  = "before_intent"
	FaultAfterIntent   = "after_intent"
	FaultAfterDispatch = "after_dispatch"
	FaultAfterResult   = "after_result"
	FaultInStepCommit  = "in_step_commit"
	FaultAwaitApproval = "await_approval"
	FaultAfterDecision = "after_decision"
	FaultLeaseHandover = "lease_handover"
	FaultInModelStream = "in_model_stream"
	// FaultInCommand: a sandboxed command of the run's workspace has just
	// started (internal/kernel/runspace); a worker killed there leaves a tree
	// half changed by a command that no checkpoint recorded.
	FaultInCommand = "in_command"
	// FaultInWorkspaceSnapshot: the tree's blobs and manifest are stored,
	// the checkpoint naming them is not; a worker killed there leaves a
	// version nobody refers to.
	FaultInWorkspaceSnapshot = "in_workspace_snapshot"
	// FaultChildStart: a sub-agent call's child run is created (and its
	// execution asked to start), the parent's record of it is not.
	FaultChildStart = "child_start"
	// FaultChildFinish: a child run's final status is durable; its
	// parent does not know yet.
	FaultChildFinish = "child_finish"
	// FaultParentResume: a parent read that all its children ended; their
	// answers are not yet recorded.
	FaultParentResume = "parent_resume"
	// FaultBeforeWake: a person's decision (approve, deny, a link, a
	// raise, a cancel) is durable; the wait that holds its task token is
	// not woken yet. The sweeper delivers it (sweeper.ActionWoken), and
	// repeating the decision on any channel wakes it too.
	FaultBeforeWake = "before_wake"
)

type noFaults struct{}

func (noFaults) Hit(string) {}

// Options configure a Harness. Store, Agents and Owner are required.
type Options struct {
	Store     Store
	Artifacts artifact.Store // for checkpoint states over store.MaxInlineState
	Agents    Agents
	// Owner names this worker in leases (host/pid or Lambda request id).
	Owner string
	// LeaseTTL is how long a lease lasts past the step's time budget
	// (default 30s), so a worker that dies is replaced after that.
	LeaseTTL time.Duration
	// CanSpill: this worker is bounded (a Lambda) and should hand runs that
	// reach a Long tool to the long-running task.
	CanSpill bool
	// ApprovalTimeout bounds how long an approval may wait (default 7 days).
	ApprovalTimeout time.Duration
	// RetryWait is how long to wait before reconciling again when a
	// destination cannot answer (default 5s).
	RetryWait time.Duration
	Clock     func() time.Time
	Logger    *slog.Logger
	Faults    FaultPoints
	// CacheRuns bounds how many runs' transcripts and plan items this
	// worker keeps between Steps (default 1024; negative: none). A kept
	// one is used only when the run's log did not move since.
	CacheRuns int
	// Telemetry records spans and metrics (internal/observe/otelkeel implements
	// it); nil records nothing, at no cost.
	Telemetry Telemetry
	// Children starts and cancels the child runs of sub-agent calls
	// (tool.Delegating); nil: a sub-agent call is answered with an error.
	Children Children
	// MaxChildDepth bounds how deep child runs nest below a run no
	// sub-agent started (default 3): a call that would start a deeper one
	// is answered with an error naming the limit.
	MaxChildDepth int64
	// MaxChildFanOut bounds the sub-agent calls one model answer may make
	// (default 8); the calls past it are answered with an error.
	MaxChildFanOut int
	// ChildPoll is the longest a parent waits between looks at its
	// children (default 30s; the first looks come sooner).
	ChildPoll time.Duration
}

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
		return h.busy(ctx, runID, budget), nil
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
	ctx, span := h.startStep(ctx, r, start)
	defer func() {
		cp, red := r.CheckpointID, redactor(nil)
		if s != nil {
			cp, red = s.cur.checkpoint, s.red
		}
		h.endStep(ctx, span, r, cp, red, d, err)
	}()
	agent, err := h.opt.Agents.Agent(r.Agent)
	if err != nil {
		return h.failNow(ctx, r, err.Error())
	}
	s = newStep(&h.opt, h.cache, agent, r, start.Add(budget))
	s.pend.event(run.Event{Type: run.EventLeaseAcquired, Data: leaseData(h.opt.Owner, r.Lease.Token, agent.Version)})
	if err := s.load(ctx); err != nil {
		return s.fail(ctx, err)
	}
	d, err = s.loop(ctx)
	var we *WorkspaceError
	if errors.As(err, &we) {
		// What the tools did is not recorded: the run ends over the last
		// checkpoint, naming why.
		s.pend.drop()
		return h.endFailed(ctx, s.run, we.Error(), "", store.Commit{})
	}
	d, err = s.finish(ctx, d, err)
	if err == nil {
		s.toCache()
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
	d, err := h.endFailed(ctx, r, errMsg, "finalize", c)
	if err != nil {
		return run.Run{}, err
	}
	h.runEnded(ctx, r, d)
	for i := 0; h.opt.Telemetry != nil && i < len(aps); i++ {
		if slices.Contains(c.CancelApprovals, aps[i].ID) {
			h.opt.Telemetry.ApprovalClosed(ctx, aps[i].Tool)
		}
	}
	return h.opt.Store.GetRun(ctx, runID)
}

func (h *Harness) failNow(ctx context.Context, r run.Run, msg string) (Decision, error) {
	return h.endFailed(ctx, r, msg, "", store.Commit{})
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

func mapStoreErr(runID string, err error) error {
	if errors.Is(err, store.ErrFenced) {
		return &FencedError{RunID: runID}
	}
	return &RetryableError{Err: err}
}
