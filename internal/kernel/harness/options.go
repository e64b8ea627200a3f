package harness

// What a Harness is built from: its options, the agents it runs, and the
// ports it reaches the world through (the store, workspaces, child runs,
// fault points).

import (
	"context"
	"fmt"
	"log/slog"
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
	// started (internal/runspace); a worker killed there leaves a tree
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

// LimitPolicy is what a run does when it would pass one of its limits
// (steps, tool calls, tokens, spend). The deadline is not one of them: a
// run past its deadline always fails.
type LimitPolicy struct {
	// Pause: instead of failing, the run asks a person. It commits an
	// approval of the tool RaiseLimitTool whose args name the limit and
	// the raise asked for (a notification in the same commit, like every
	// approval), and waits holding no process. Approved, the limit is
	// raised by that amount (a budget_raised event) and the run goes on;
	// denied or cancelled, the run fails as it would have.
	Pause bool
	// RaiseBy is the raise a pause asks for, per limit; a zero field asks
	// for the limit's current size again. Its Deadline is ignored.
	RaiseBy run.Limits
}

// Workspaces opens a run's workspace on this worker as of version (empty: a
// run that never had files). internal/runspace implements it.
type Workspaces func(ctx context.Context, runID, version string) (Workspace, error)

// Workspace is a run's tree on this worker.
type Workspace interface {
	// Touch is called before a tool may change the tree.
	Touch() error
	// Touched reports whether a tool may have changed it since it was
	// opened or snapshotted.
	Touched() bool
	// Snapshot stores the tree and returns its version. An error wrapping
	// workspace.ErrTooLarge, ErrPathEscapes or ErrUnsupported is the tree's
	// fault and ends the run; any other is retried.
	Snapshot(ctx context.Context) (string, error)
	// Bind returns ctx carrying the tree for the tool's code.
	Bind(ctx context.Context) context.Context
}

// Children starts and stops the child runs of sub-agent calls. compose
// builds it from the store, the execution starter and the cancel path a
// person's cancel takes.
type Children interface {
	// CreateRun stores the child as store.Runs.CreateRun does: the same
	// child of the same call, created again, is found (created=false).
	CreateRun(ctx context.Context, r run.Run) (stored run.Run, created bool, err error)
	// StartRun makes sure an execution drives the run; idempotent.
	StartRun(ctx context.Context, runID string) error
	// CancelRun requests the run's cancel as a person's cancel does
	// (waking a wait it withdraws); idempotent.
	CancelRun(ctx context.Context, runID, by string) error
}
