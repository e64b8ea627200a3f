package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Sentinel errors. Backends wrap them with detail; callers use errors.Is.
var (
	// ErrNotFound: the run, approval, operation or checkpoint does not exist.
	ErrNotFound = errors.New("not found")
	// ErrFenced: the fencing token is stale; another worker owns the run.
	ErrFenced = errors.New("fenced: lease token is stale")
	// ErrLeaseHeld: another owner holds an unexpired lease.
	ErrLeaseHeld = errors.New("lease held by another owner")
	// ErrConflict: the write contradicts stored data (same id, other content;
	// a decision on an approval that is no longer pending).
	ErrConflict = errors.New("conflict")
	// ErrHashMismatch: an approval decision named other arguments than the
	// ones awaiting approval.
	ErrHashMismatch = errors.New("args hash does not match the pending approval")
	// ErrBudgetExceeded: a reservation would take the run past a limit.
	ErrBudgetExceeded = errors.New("budget exceeded")
	// ErrInvalid: the input is malformed (empty id, oversized data, unknown value).
	ErrInvalid = errors.New("invalid input")
	// ErrTerminal: the run is finished and accepts no more changes of this kind.
	ErrTerminal = errors.New("run is finished")
	// ErrNeedsHuman: the run is needs_human: no worker may take it until a
	// person decides (a cancel, or settling what it waits on).
	ErrNeedsHuman = errors.New("run needs a person's decision")
	// ErrUnsettled: a commit would end the run (completed, failed or
	// cancelled) while one of its operations has no settled outcome:
	// pending (an intent, or an uncertain dispatch not yet reconciled) or
	// needs_human (only a person can say what happened).
	ErrUnsettled = errors.New("an operation of the run is not settled")
	// ErrCorrupt: the store's own integrity check found it damaged (a
	// database file that is no longer well formed): what it answers
	// cannot be trusted, and nothing should be served from it.
	ErrCorrupt = errors.New("the store is corrupt")
	// ErrLinkUsed: a decision arrived through a one-time link that was
	// used before. It wraps ErrConflict.
	ErrLinkUsed = fmt.Errorf("%w: the one-time link was used already", ErrConflict)
)

// IntegrityChecker is a store that can check its own storage (SQLite:
// PRAGMA quick_check). CheckIntegrity returns an error wrapping ErrCorrupt
// when the check fails, another error when it could not run.
type IntegrityChecker interface {
	CheckIntegrity(ctx context.Context) error
}

// Size limits, chosen to fit a DynamoDB item with room for attributes.
const (
	MaxEventData      = 256 << 10 // bytes of Event.Data
	MaxInlineState    = 300 << 10 // bytes of Checkpoint.State kept inline
	MaxArgs           = 256 << 10 // bytes of a plan item's or approval's args
	MaxText           = 256 << 10 // bytes of a run's request, output, error, input text
	MaxItemsPerCommit = 90        // records per Commit (see CommitItems): leaves room under TransactWriteItems' 100
	MaxEventsPerPage  = 1000
	MaxRunsPerPage    = 1000
)

// Runs creates and reads runs. Used by the API.
type Runs interface {
	// CreateRun stores r as a new run in status created, with a run_created
	// event at seq 1, and its session if new. If r.ClientKey is set and a run
	// with the same owner and key exists, that run is returned with
	// created=false and nothing is written. r.ID must be set by the caller.
	// A child run (r.Caller set) whose id exists with the same caller run
	// and operation is returned with created=false: a sub-agent call
	// started again after a crash finds its one child.
	CreateRun(ctx context.Context, r run.Run) (stored run.Run, created bool, err error)
	GetRun(ctx context.Context, id string) (run.Run, error)
	ListRuns(ctx context.Context, q ListRunsQuery) (RunPage, error)
}

// ListRunsQuery filters and pages ListRuns. Results are newest first.
type ListRunsQuery struct {
	Owner     string // optional: only runs of this owner
	Status    run.Status
	SessionID string
	// Parent: only the child runs that sub-agent calls of this run
	// started (run.Run.Caller.RunID), not its forks.
	Parent    string
	Limit     int    // 0 means 100
	PageToken string // opaque, from a previous RunPage
}

// RunPage is one page of runs; NextPageToken is empty on the last page.
type RunPage struct {
	Runs          []run.Run
	NextPageToken string
}

// Leases hands out the single-writer claim on a run.
type Leases interface {
	// AcquireLease gives owner the run's lease until now+ttl with a new
	// fencing token (the previous token + 1), and returns the run as stored
	// afterwards. It fails with ErrLeaseHeld while another owner holds an
	// unexpired lease, ErrTerminal if the run is finished, ErrNeedsHuman if
	// it waits for a person: needs_human is left only by a person's
	// recorded decision, never by a worker that happens to restart.
	AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (run.Run, error)
	// ReleaseLease ends the lease held with token; ErrFenced if token is stale.
	ReleaseLease(ctx context.Context, runID string, token int64) error
}

// Committer writes a step's results atomically under the fencing token.
type Committer interface {
	// Commit applies c in one transaction: all or nothing. The events get
	// the next seqs of the run, returned in order. ErrFenced when c.Token is
	// not the run's current token; ErrIllegalTransition (from package run)
	// for a refused status change; ErrConflict when an operation or approval
	// it creates already exists with other content, or an operation update
	// targets one that is not pending.
	Commit(ctx context.Context, c Commit) (seqs []int64, err error)
}

// Commit is everything one atomic write under a lease may change.
type Commit struct {
	RunID string
	Token int64
	// Run holds the changes to the run row; nil leaves it as it is.
	Run *RunPatch
	// Events are appended in order; the store sets RunID, Seq and, when
	// zero, Time.
	Events []run.Event
	// Checkpoint, when set, is stored and becomes the run's current one.
	Checkpoint *run.Checkpoint
	// PlanItems are inserted or replaced by id.
	PlanItems []run.PlanItem
	// NewOperations are created (status pending); ErrConflict if the id
	// exists with another args hash. Creating the same intent twice is a no-op.
	NewOperations []run.Operation
	// OperationUpdates change pending operations to their outcome.
	OperationUpdates []OperationUpdate
	// NewApprovals are created in status pending.
	NewApprovals []run.Approval
	// CancelApprovals are set to cancelled if still pending.
	CancelApprovals []string
	// Notifications are new outbox records (status pending, due at once),
	// written with the approval or status change they announce; one whose
	// id exists is left as it is.
	Notifications []run.Notification
	// ConsumeInputs marks queued inputs as consumed.
	ConsumeInputs []string
	// Used is added to the run's used budget counters, and Released is
	// taken off its reserved counters, in the same write: a step settles
	// what it spent without a write of its own.
	Used     Amounts
	Released Amounts
}

// RunPatch is a change to the run row; zero fields are left unchanged.
type RunPatch struct {
	Status       run.Status // validated against the transition table
	Output       *string
	Error        *string
	Command      *string
	StepsDelta   int64
	CheckpointID string
	// ReleaseLease clears the lease in the same write (a step that ends).
	ReleaseLease bool
	// RaiseLimits is added to the run's limits in the same write: a
	// person raised them (a budget pause answered). A limit the run does
	// not have (zero: no limit) stays none. Its Deadline must be zero:
	// the deadline is never raised.
	RaiseLimits run.Limits
}

// OperationUpdate records an operation's outcome.
type OperationUpdate struct {
	ID string
	// Status is succeeded, failed or needs_human; or pending for a new
	// attempt of the operation (AttemptsDelta ≥ 1, no external id or
	// result): its intent recorded again before it is dispatched once
	// more with the same id, after a person established the last attempt
	// did not happen.
	Status     run.OpStatus
	ExternalID string
	Result     []byte
	Error      string
	// AttemptsDelta is added to the operation's attempt counter.
	AttemptsDelta int64
}

// Events appends to and reads a run's log outside of a step (API actions).
type Events interface {
	// AppendEvents appends events with the next seqs, atomically, and returns
	// the seqs. Safe under any number of concurrent callers: the log stays
	// gapless with no duplicate seq. Like Commit, it chains the events
	// (run.Chain: PrevHash, Hash) and moves the run's LastHash in the same
	// write; ReadAudit verifies the chain.
	AppendEvents(ctx context.Context, runID string, events []run.Event) ([]int64, error)
	// ReadEvents returns up to limit events with seq > afterSeq, in order.
	ReadEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Event, error)
}

// Operations reads the operation log; writes go through Commit.
type Operations interface {
	// ListOperations returns the run's operations, oldest first; with
	// pendingOnly only those still pending (to reconcile on recovery).
	ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error)
}

// Approvals reads and decides approvals, and reads grants.
type Approvals interface {
	GetApproval(ctx context.Context, runID, approvalID string) (run.Approval, error)
	ListApprovals(ctx context.Context, runID string) ([]run.Approval, error)
	// DecideApproval records a person's decision on a pending approval whose
	// args hash equals argsHash, with an approval_granted or approval_denied
	// event, and, for an approved confirm_once approval, a session grant —
	// all in one write, with the link of d.Link spent in that write too.
	// The check order: the approval exists, the link (ErrNotFound,
	// ErrLinkUsed), the approval is pending (ErrConflict), its hash
	// (ErrHashMismatch). It returns the stored approval,
	// whose TaskToken (if any) the caller uses to resume the run.
	DecideApproval(ctx context.Context, d Decision) (run.Approval, error)
	// AttachTaskToken stores the Step Functions task token on an approval
	// and returns it as stored (possibly already decided).
	AttachTaskToken(ctx context.Context, runID, approvalID, token string) (run.Approval, error)
	// HasGrant reports whether the session holds a grant for tool.
	HasGrant(ctx context.Context, sessionID, tool string) (bool, error)
}

// Decision is a person's answer to an approval.
type Decision struct {
	RunID      string
	ApprovalID string
	Approve    bool
	ArgsHash   string
	DecidedBy  string
	Reason     string
	// Link, when set, spends that one-time approval link in the same
	// write as the decision: both happen or neither does, so a crash can
	// neither spend a link without deciding nor decide without spending
	// it. ErrNotFound when the notification has no link of that hash;
	// ErrLinkUsed when the link was used before.
	Link *LinkUse
}

// LinkUse names the one-time link a decision arrives through.
type LinkUse struct {
	NotificationID string
	Hash           string
	At             time.Time
}

// Budgets reserves a run's budget atomically; a Commit's Used and Released
// settle it (there is no separate settle: every settlement is part of a
// Step's write under its lease).
type Budgets interface {
	// Reserve holds amounts against the run's limits. It fails with
	// ErrBudgetExceeded, writing nothing, if used + reserved + r would pass
	// any limit. Concurrent reservations never together pass a limit.
	Reserve(ctx context.Context, runID string, r Amounts) (run.Budget, error)
}

// Amounts is a quantity of each budgeted resource.
type Amounts struct {
	Tokens        int64
	SpendMicroUSD int64
	ToolCalls     int64
}

// Control carries a person's instructions to a running run.
type Control interface {
	// RequestCancel sets the run's cancel flag, cancels its pending
	// approvals and appends cancel_requested (and approval_cancelled)
	// events, atomically. A run in needs_human, which no worker may take,
	// is cancelled in the same write (status cancelled, a run_cancelled
	// event naming by, the lease cleared): the person's cancel is the
	// decision it waited for, and its needs_human operations stay as they
	// are, since nobody learnt whether they happened. It returns the run and the approvals it cancelled
	// (so the caller can wake a wait through their task tokens). A run
	// whose flag is already set and that has no pending approval is
	// returned as it is: nothing is written, so repeated or concurrent
	// cancels record one cancel_requested. ErrTerminal if the run is
	// finished.
	RequestCancel(ctx context.Context, runID, by string) (run.Run, []run.Approval, error)
	// EnqueueInput stores text as input for the run with an input_received
	// event. ErrTerminal if the run is finished.
	EnqueueInput(ctx context.Context, runID, text string) (run.Input, error)
	// ListInputs returns the run's inputs, oldest first; with pendingOnly
	// only those not yet consumed.
	ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error)
}

// Checkpoints reads checkpoints and plan items.
type Checkpoints interface {
	GetCheckpoint(ctx context.Context, runID, checkpointID string) (run.Checkpoint, error)
	// ListCheckpoints returns up to limit checkpoints with seq > afterSeq,
	// in seq order.
	ListCheckpoints(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Checkpoint, error)
	ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error)
}

// Signals is the cheap read a running step makes between its writes, to
// see a cancel request (and a lost lease) without reading the whole run.
type Signals interface {
	// RunSignals reads the run's cancel flag, lease token and status in one
	// consistent read of the run row. ErrNotFound for an unknown run.
	RunSignals(ctx context.Context, runID string) (RunSignals, error)
}

// RunSignals is what RunSignals reads.
type RunSignals struct {
	CancelRequested bool
	LeaseToken      int64
	Status          run.Status
}

// Store is every capability; backends implement it, consumers take the
// smaller interfaces they use.
type Store interface {
	Runs
	Leases
	Committer
	Events
	Operations
	Approvals
	Budgets
	Control
	Checkpoints
	Signals
	Settler
	Outbox
	Close() error
}
