package run

import (
	"encoding/json"
	"strings"
	"time"
)

// Session groups the runs of one conversation. Grants for confirm_once tools
// live at this level.
type Session struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
}

// InputPolicy says what happens to user input that arrives while a run is active.
type InputPolicy string

// Input policies.
const (
	InputReject    InputPolicy = "reject"    // refuse it
	InputQueue     InputPolicy = "queue"     // keep it for the next turn
	InputInterrupt InputPolicy = "interrupt" // stop after the current tool, then a new turn
	InputRollback  InputPolicy = "rollback"  // fork from a checkpoint into a new run
)

// Valid reports whether p is a known policy.
func (p InputPolicy) Valid() bool {
	switch p {
	case InputReject, InputQueue, InputInterrupt, InputRollback:
		return true
	}
	return false
}

// Limits bound a run. A zero field means "no limit" except where DefaultLimits
// fills it in when a run is created.
type Limits struct {
	MaxSteps     int64 `json:"max_steps,omitempty"`
	MaxToolCalls int64 `json:"max_tool_calls,omitempty"`
	MaxTokens    int64 `json:"max_tokens,omitempty"`
	// MaxSpendMicroUSD is the spend limit in millionths of a US dollar, so
	// budget arithmetic stays in integers.
	MaxSpendMicroUSD int64     `json:"max_spend_micro_usd,omitempty"`
	Deadline         time.Time `json:"deadline,omitzero"`
}

// DefaultLimits are applied to fields left at zero when a run is created:
// 200 steps, 500 tool calls, 2M tokens, 20 USD.
func DefaultLimits() Limits {
	return Limits{MaxSteps: 200, MaxToolCalls: 500, MaxTokens: 2_000_000, MaxSpendMicroUSD: 20_000_000}
}

// WithDefaults fills zero fields from DefaultLimits. A deadline is not defaulted.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxSteps == 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxToolCalls == 0 {
		l.MaxToolCalls = d.MaxToolCalls
	}
	if l.MaxTokens == 0 {
		l.MaxTokens = d.MaxTokens
	}
	if l.MaxSpendMicroUSD == 0 {
		l.MaxSpendMicroUSD = d.MaxSpendMicroUSD
	}
	return l
}

// Budget holds what a run has used and what is reserved by calls in flight.
// Reserved amounts are held against the limits until settled, so concurrent
// callers can never together exceed a limit.
type Budget struct {
	TokensUsed            int64 `json:"tokens_used"`
	TokensReserved        int64 `json:"tokens_reserved"`
	SpendUsedMicroUSD     int64 `json:"spend_used_micro_usd"`
	SpendReservedMicroUSD int64 `json:"spend_reserved_micro_usd"`
	ToolCallsUsed         int64 `json:"tool_calls_used"`
	ToolCallsReserved     int64 `json:"tool_calls_reserved"`
}

// Lease is the single-writer claim on a run. Token is the fencing token:
// every write made under the lease is conditional on it.
type Lease struct {
	Owner  string    `json:"owner,omitempty"`
	Token  int64     `json:"token"`
	Expiry time.Time `json:"expiry,omitzero"`
}

// Run is one accepted turn: what was asked, where it stands, its bounds and
// who may write it.
type Run struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Owner     string `json:"owner"`
	Agent     string `json:"agent"`
	// ClientKey is the caller's idempotency key: creating a run twice with
	// the same owner and key yields the same run.
	ClientKey string `json:"client_key,omitempty"`
	Request   string `json:"request"`
	// Command is the normalized form of the request the agent works on.
	Command     string      `json:"command,omitempty"`
	Status      Status      `json:"status"`
	Output      string      `json:"output,omitempty"`
	Error       string      `json:"error,omitempty"`
	InputPolicy InputPolicy `json:"input_policy"`
	Limits      Limits      `json:"limits"`
	Budget      Budget      `json:"budget"`
	Lease       Lease       `json:"lease"`
	// CancelRequested is set by a cancel request; the harness honours it at
	// its next check.
	CancelRequested bool  `json:"cancel_requested,omitempty"`
	StepCount       int64 `json:"step_count"`
	// CheckpointID is the checkpoint the run resumes from.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// LastSeq is the seq of the newest event; the log is gapless from 1.
	LastSeq int64 `json:"last_seq"`
	// LastHash is the Hash of the event at LastSeq: the head of the run's
	// event chain ("" before any chained event; see EventHash).
	LastHash string `json:"last_hash,omitempty"`
	// ParentRunID and ForkCheckpointID are set on a run forked from another.
	ParentRunID      string `json:"parent_run_id,omitempty"`
	ForkCheckpointID string `json:"fork_checkpoint_id,omitempty"`
	// Caller is set on a child run, started by a sub-agent call of
	// another run; zero on every other run.
	Caller Caller `json:"caller,omitzero"`
	// TraceParent is the run's W3C trace context (NewTraceParent), set
	// when the run is created: every Step's spans join this one trace,
	// across processes, Lambda invocations and days of waiting.
	TraceParent string `json:"trace_parent,omitempty"`
	// AgentVersion is the version of the agent (package agentver) the
	// run was created under; empty for a run created before versions.
	// Each Step records the version that ran it (lease_acquired, the
	// checkpoint state, agent_upgraded).
	AgentVersion string    `json:"agent_version,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Mode is a tool's permission mode.
type Mode string

// Permission modes.
const (
	ModeSafeReadonly Mode = "safe_readonly" // runs without asking
	ModeConfirmOnce  Mode = "confirm_once"  // asks once per session, then a grant covers it
	ModeMutating     Mode = "mutating"      // asks for the exact arguments every time
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	return m == ModeSafeReadonly || m == ModeConfirmOnce || m == ModeMutating
}

// PlanStatus is where a plan item stands.
type PlanStatus string

// Plan item statuses.
const (
	PlanPending          PlanStatus = "pending"
	PlanAwaitingApproval PlanStatus = "awaiting_approval"
	PlanRunning          PlanStatus = "running"
	PlanCompleted        PlanStatus = "completed"
	PlanFailed           PlanStatus = "failed"
	PlanDenied           PlanStatus = "denied"
	PlanSkipped          PlanStatus = "skipped"
	PlanNeedsHuman       PlanStatus = "needs_human"
)

// PlanItem is one step of a turn, with the exact arguments the agent asked for.
type PlanItem struct {
	ID       string          `json:"id"`
	RunID    string          `json:"run_id"`
	Order    int64           `json:"order"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	ArgsHash string          `json:"args_hash"`
	Mode     Mode            `json:"mode"`
	Status   PlanStatus      `json:"status"`
	// CallID is the model's tool-call id, kept to answer the model; it is
	// never an operation's identity.
	CallID    string `json:"call_id,omitempty"`
	ResultRef string `json:"result_ref,omitempty"`
	// Result is the tool's recorded result, reused on replay and fork so an
	// effect is never repeated.
	Result    json.RawMessage `json:"result,omitempty"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// EventType names what an event records.
type EventType string

// Event types.
const (
	EventRunCreated         EventType = "run_created"
	EventTurnStarted        EventType = "turn_started"
	EventModelCallStarted   EventType = "model_call_started"
	EventModelCallCompleted EventType = "model_call_completed"
	EventModelCallFailed    EventType = "model_call_failed"
	EventToolStarted        EventType = "tool_started"
	EventToolProgress       EventType = "tool_progress"
	EventToolCompleted      EventType = "tool_completed"
	EventToolFailed         EventType = "tool_failed"
	EventApprovalRequested  EventType = "approval_requested"
	EventApprovalGranted    EventType = "approval_granted"
	EventApprovalDenied     EventType = "approval_denied"
	EventApprovalCancelled  EventType = "approval_cancelled"
	EventOpIntent           EventType = "op_intent"
	EventOpSucceeded        EventType = "op_succeeded"
	EventOpFailed           EventType = "op_failed"
	EventOpReconciled       EventType = "op_reconciled"
	EventOpNeedsHuman       EventType = "op_needs_human"
	EventOpUncertain        EventType = "op_uncertain"
	// EventOpSettled records a person's answer on a needs_human operation
	// (store.Settlement): who, what they established, why.
	EventOpSettled         EventType = "op_settled"
	EventCheckpointWritten EventType = "checkpoint_written"
	EventLeaseAcquired     EventType = "lease_acquired"
	EventLeaseLost         EventType = "lease_lost"
	EventBudgetReserved    EventType = "budget_reserved"
	EventBudgetExceeded    EventType = "budget_exceeded"
	// EventBudgetPaused: the run would pass a limit and its agent's policy
	// pauses it to ask a person (an approval naming the limit and the raise
	// asked for) instead of failing it.
	EventBudgetPaused EventType = "budget_paused"
	// EventBudgetRaised: a limit raised by the approval of a pause: which
	// limit, by how much, from and to what, and who approved it.
	EventBudgetRaised    EventType = "budget_raised"
	EventInputReceived   EventType = "input_received"
	EventCancelRequested EventType = "cancel_requested"
	EventRunSpilled      EventType = "run_spilled"
	EventRunForked       EventType = "run_forked"
	EventTurnCompleted   EventType = "turn_completed"
	EventRunCompleted    EventType = "run_completed"
	EventRunFailed       EventType = "run_failed"
	EventRunCancelled    EventType = "run_cancelled"
	EventRunNeedsHuman   EventType = "run_needs_human"
	EventRateLimited     EventType = "rate_limited"
	// EventRunResolved: a person's decision on a run the version check
	// stopped (store.Resolution): by, decision (old_version or deny),
	// reason, and the approvals it reopened or denied.
	EventRunResolved EventType = "run_resolved"
	// EventRunSwept is a repair by the sweeper: what it found (no
	// execution, an execution that ended while the run was not finished)
	// and what it did (started, resumed, finalized).
	EventRunSwept EventType = "run_swept"
	// EventNotificationFailed: a notification's delivery gave up after its
	// last attempt (its approval, if any, stays pending).
	EventNotificationFailed EventType = "notification_failed"
	// EventChildStarted: a sub-agent call's child run exists and an
	// execution drives it (data: child_run_id, agent, how, limits).
	EventChildStarted EventType = "child_started"
	// EventChildEnded: the child of a sub-agent call ended and its
	// outcome answers the call (data: child_run_id, agent, status, error,
	// what it used).
	EventChildEnded EventType = "child_ended"
)

// Event is one entry of a run's append-only log. Seq is assigned by the store:
// gapless from 1 within a run.
type Event struct {
	RunID       string          `json:"run_id"`
	Seq         int64           `json:"seq"`
	Type        EventType       `json:"type"`
	Time        time.Time       `json:"time"`
	PlanItemID  string          `json:"plan_item_id,omitempty"`
	OperationID string          `json:"operation_id,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	// PrevHash is the Hash of the event before it ("" for the first), and
	// Hash is EventHash of this event: the store sets both as it appends, in
	// the same write, so the log is a hash chain per run.
	PrevHash string `json:"prev_hash,omitempty"`
	Hash     string `json:"hash,omitempty"`
	// HashDerived says the store did not keep this event's hash but derived
	// it on read from the event's content (SQLite keeps only the hash of a
	// commit's last event): an edit here shows at the next stored hash, and
	// VerifyChain names the span between.
	HashDerived bool `json:"hash_derived,omitempty"`
}

// Checkpoint is where a run can resume. State holds a delta (what this step
// added) inline, or StateRef points to an artifact holding it; Parent links
// the chain, so a checkpoint never copies everything before it.
type Checkpoint struct {
	ID               string    `json:"id"`
	RunID            string    `json:"run_id"`
	Seq              int64     `json:"seq"`
	Parent           string    `json:"parent,omitempty"`
	Step             int64     `json:"step"`
	State            []byte    `json:"state,omitempty"`
	StateRef         string    `json:"state_ref,omitempty"`
	StateHash        string    `json:"state_hash,omitempty"`
	Size             int64     `json:"size"`
	WorkspaceVersion string    `json:"workspace_version,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
}

// Input is user input received while a run was active, kept for the next turn.
type Input struct {
	RunID      string    `json:"run_id"`
	ID         string    `json:"id"`
	Text       string    `json:"text"`
	Consumed   bool      `json:"consumed"`
	ReceivedAt time.Time `json:"received_at"`
}

// Caller is a child run's lineage: the run, plan item and operation of the
// sub-agent call that started it, and how deep it is below the run that
// no sub-agent call started (1 for a child of such a run). A child's id is
// derived from RunID and OperationID (ChildRunID), so the lineage names
// the one child a call can ever have.
type Caller struct {
	RunID       string `json:"run_id,omitempty"`
	PlanItemID  string `json:"plan_item_id,omitempty"`
	OperationID string `json:"operation_id,omitempty"`
	Depth       int64  `json:"depth,omitempty"`
}

// ChildRunID is the id of the child run that the sub-agent call of
// operation opID of run parentID starts: deterministic, so every attempt
// of the call names the same run and a crash can never leave a second.
// It has NewID's form (prefix "run", 28 hex digits): the first 12 digits
// are the parent's time digits (children sort with their parent), the
// last 16 a hash of both ids.
func ChildRunID(parentID, opID string) string {
	d := HashDigits(HashBytes([]byte(parentID + "\x00" + opID)))
	tm := strings.TrimPrefix(parentID, "run_")
	if len(tm) < 12 {
		tm = strings.Repeat("0", 12)
	}
	return "run_" + tm[:12] + d[:16]
}
