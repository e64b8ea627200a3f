package api

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
)

// The JSON shapes of requests and responses. The client package decodes the
// same types, so the wire format has one definition.

// CreateRunRequest is the body of POST /v1/runs.
type CreateRunRequest struct {
	Agent     string `json:"agent"`
	Input     string `json:"input"`
	SessionID string `json:"session_id,omitempty"`
	// Limits left at zero take run.DefaultLimits.
	Limits      *LimitsRequest  `json:"limits,omitempty"`
	InputPolicy run.InputPolicy `json:"input_policy,omitempty"` // default queue
}

// LimitsRequest are the bounds a caller may set on a new run.
type LimitsRequest struct {
	MaxSteps         int64 `json:"max_steps,omitempty"`
	MaxToolCalls     int64 `json:"max_tool_calls,omitempty"`
	MaxTokens        int64 `json:"max_tokens,omitempty"`
	MaxSpendMicroUSD int64 `json:"max_spend_micro_usd,omitempty"`
	// Deadline is an RFC 3339 time in the future.
	Deadline string `json:"deadline,omitempty"`
}

// DecisionRequest is the body of POST /v1/runs/{id}/approvals/{approval_id}.
type DecisionRequest struct {
	Decision string `json:"decision"` // approve or deny
	// ArgsHash must equal the approval's args_hash: the caller proves it
	// decides on the exact action it was shown.
	ArgsHash string `json:"args_hash"`
	Reason   string `json:"reason,omitempty"`
}

// Decisions.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// InputRequest is the body of POST /v1/runs/{id}/input.
type InputRequest struct {
	Text string `json:"text"`
}

// ForkRequest is the body of POST /v1/runs/{id}/fork.
type ForkRequest struct {
	CheckpointID string `json:"checkpoint_id"`
}

// Run is a run as the API shows it.
type Run struct {
	RunID            string          `json:"run_id"`
	SessionID        string          `json:"session_id"`
	Owner            string          `json:"owner"`
	Agent            string          `json:"agent"`
	Status           run.Status      `json:"status"`
	Input            string          `json:"input"`
	Output           string          `json:"output,omitempty"`
	Error            string          `json:"error,omitempty"`
	InputPolicy      run.InputPolicy `json:"input_policy"`
	Limits           run.Limits      `json:"limits"`
	Counters         Counters        `json:"counters"`
	CancelRequested  bool            `json:"cancel_requested,omitempty"`
	CheckpointID     string          `json:"checkpoint_id,omitempty"`
	ParentRunID      string          `json:"parent_run_id,omitempty"`
	ForkCheckpointID string          `json:"fork_checkpoint_id,omitempty"`
	IdempotencyKey   string          `json:"idempotency_key,omitempty"`
	// AgentVersion is the agent version the run was created under
	// (sha256 hex; empty for runs created before versions).
	AgentVersion string `json:"agent_version,omitempty"`
	// Caller is set on a child run: the run, plan item and operation of
	// the sub-agent call that started it, and its depth.
	Caller *run.Caller `json:"caller,omitempty"`
	// Undelivered lists the inputs the run accepted (POST .../input)
	// and ended without reading, oldest first: they will never reach
	// the agent. Set by GET /v1/runs/{id} for a finished run only.
	Undelivered []string `json:"undelivered_inputs,omitempty"`
	// UpgradeBlocks is set by GET /v1/runs/{id} on a run awaiting
	// approval that this deployment's Step would stop for a person (the
	// version check, as upgrade-check previews it): approving now would
	// not apply the call. Its problems say why.
	UpgradeBlocks *agentver.Verdict `json:"upgrade_blocks,omitempty"`
	// Next is who moves the run next, and with which command: set by
	// GET /v1/runs/{id} on every run that has not ended.
	Next      *NextMove `json:"next,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Links     Links     `json:"links"`
}

// Counters are what a run has used so far.
type Counters struct {
	Steps              int64 `json:"steps"`
	Events             int64 `json:"events"`
	TokensUsed         int64 `json:"tokens_used"`
	ToolCallsUsed      int64 `json:"tool_calls_used"`
	SpendUsedMicroUSD  int64 `json:"spend_used_micro_usd"`
	TokensReserved     int64 `json:"tokens_reserved,omitempty"`
	ToolCallsReserved  int64 `json:"tool_calls_reserved,omitempty"`
	SpendReservedMicro int64 `json:"spend_reserved_micro_usd,omitempty"`
}

// Links are the run's related endpoints, relative to the API root.
type Links struct {
	Self        string `json:"self"`
	Events      string `json:"events"`
	Approvals   string `json:"approvals"`
	Checkpoints string `json:"checkpoints"`
	Artifacts   string `json:"artifacts"`
	Cancel      string `json:"cancel"`
	Input       string `json:"input"`
	Fork        string `json:"fork"`
}

func runView(r run.Run) Run {
	self := "/v1/runs/" + url.PathEscape(r.ID)
	return Run{
		RunID: r.ID, SessionID: r.SessionID, Owner: r.Owner, Agent: r.Agent, Status: r.Status,
		Input: r.Request, Output: r.Output, Error: r.Error, InputPolicy: r.InputPolicy, Limits: r.Limits,
		Counters: Counters{
			Steps: r.StepCount, Events: r.LastSeq,
			TokensUsed: r.Budget.TokensUsed, ToolCallsUsed: r.Budget.ToolCallsUsed,
			SpendUsedMicroUSD: r.Budget.SpendUsedMicroUSD, TokensReserved: r.Budget.TokensReserved,
			ToolCallsReserved: r.Budget.ToolCallsReserved, SpendReservedMicro: r.Budget.SpendReservedMicroUSD,
		},
		CancelRequested: r.CancelRequested, CheckpointID: r.CheckpointID,
		ParentRunID: r.ParentRunID, ForkCheckpointID: r.ForkCheckpointID, IdempotencyKey: r.ClientKey,
		AgentVersion: r.AgentVersion, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Caller: callerView(r.Caller),
		Links: Links{
			Self: self, Events: self + "/events", Approvals: self + "/approvals",
			Checkpoints: self + "/checkpoints", Artifacts: self + "/artifacts",
			Cancel: self + "/cancel", Input: self + "/input", Fork: self + "/fork",
		},
	}
}

// RunList is the answer of GET /v1/runs.
type RunList struct {
	Runs []Run `json:"runs"`
	// NextPageToken, when not empty, fetches the next page as ?page_token=.
	NextPageToken string `json:"next_page_token,omitempty"`
}

// Event is one entry of a run's log.
type Event struct {
	Seq         int64           `json:"seq"`
	Type        run.EventType   `json:"type"`
	Time        time.Time       `json:"time"`
	PlanItemID  string          `json:"plan_item_id,omitempty"`
	OperationID string          `json:"operation_id,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
}

func eventView(e run.Event) Event {
	return Event{Seq: e.Seq, Type: e.Type, Time: e.Time, PlanItemID: e.PlanItemID, OperationID: e.OperationID, Data: e.Data}
}

// EventPage is the answer of GET /v1/runs/{id}/events.
type EventPage struct {
	Events []Event `json:"events"`
	// NextAfter is the ?after= of the next page: the last seq returned, or
	// the request's after when the page is empty.
	NextAfter int64 `json:"next_after"`
	// Status is the run's status when the page was read; with a terminal
	// status and no more events, the log is complete.
	Status run.Status `json:"status"`
	// Done reports that the run is terminal and this page reaches the end
	// of its log.
	Done bool `json:"done"`
}

// StreamEnd is the data of the final "end" event of an SSE stream.
type StreamEnd struct {
	Status  run.Status `json:"status"`
	LastSeq int64      `json:"last_seq"`
}

// Approval is an approval as the API shows it; its task token is never shown.
type Approval struct {
	ApprovalID string             `json:"approval_id"`
	RunID      string             `json:"run_id"`
	PlanItemID string             `json:"plan_item_id,omitempty"`
	Tool       string             `json:"tool"`
	Mode       run.Mode           `json:"mode"`
	Args       json.RawMessage    `json:"args"`
	ArgsHash   string             `json:"args_hash"`
	Status     run.ApprovalStatus `json:"status"`
	DecidedBy  string             `json:"decided_by,omitempty"`
	Reason     string             `json:"reason,omitempty"`
	CreatedAt  time.Time          `json:"created_at"`
	DecidedAt  time.Time          `json:"decided_at,omitzero"`
}

func approvalView(a run.Approval) Approval {
	return Approval{ApprovalID: a.ID, RunID: a.RunID, PlanItemID: a.PlanItemID, Tool: a.Tool, Mode: a.Mode,
		Args: a.Args, ArgsHash: a.ArgsHash, Status: a.Status, DecidedBy: a.DecidedBy, Reason: a.Reason,
		CreatedAt: a.CreatedAt, DecidedAt: a.DecidedAt}
}

// ApprovalList is the answer of GET /v1/runs/{id}/approvals.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// CancelResponse is the answer of POST /v1/runs/{id}/cancel.
type CancelResponse struct {
	Run Run `json:"run"`
	// CancelledApprovals are the approvals the cancellation withdrew.
	CancelledApprovals []Approval `json:"cancelled_approvals"`
}

// InputResponse is the answer of POST /v1/runs/{id}/input.
type InputResponse struct {
	InputID    string          `json:"input_id"`
	RunID      string          `json:"run_id"`
	Policy     run.InputPolicy `json:"policy"`
	ReceivedAt time.Time       `json:"received_at"`
}

// Checkpoint is a checkpoint's metadata; its state is not shown.
type Checkpoint struct {
	CheckpointID     string    `json:"checkpoint_id"`
	Seq              int64     `json:"seq"`
	Parent           string    `json:"parent,omitempty"`
	Step             int64     `json:"step"`
	Size             int64     `json:"size"`
	StateHash        string    `json:"state_hash,omitempty"`
	StateRef         string    `json:"state_ref,omitempty"`
	WorkspaceVersion string    `json:"workspace_version,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
}

func checkpointView(c run.Checkpoint) Checkpoint {
	return Checkpoint{CheckpointID: c.ID, Seq: c.Seq, Parent: c.Parent, Step: c.Step, Size: c.Size,
		StateHash: c.StateHash, StateRef: c.StateRef, WorkspaceVersion: c.WorkspaceVersion, CreatedAt: c.CreatedAt}
}

// CheckpointPage is the answer of GET /v1/runs/{id}/checkpoints.
type CheckpointPage struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
	NextAfter   int64        `json:"next_after"`
}

// Artifact describes a stored blob and where to download it.
type Artifact struct {
	CheckpointID string `json:"checkpoint_id"`
	Name         string `json:"name"`
	SHA256       string `json:"sha256"`
	Size         int64  `json:"size"`
	Href         string `json:"href"`
}

func artifactView(i artifact.Info) Artifact {
	return Artifact{CheckpointID: i.Key.CheckpointID, Name: i.Key.Name, SHA256: i.SHA256, Size: i.Size,
		Href: "/v1/runs/" + url.PathEscape(i.Key.RunID) + "/artifacts/" + url.PathEscape(i.Key.CheckpointID) + "/" + url.PathEscape(i.Key.Name)}
}

// ArtifactList is the answer of GET /v1/runs/{id}/artifacts.
type ArtifactList struct {
	Artifacts []Artifact `json:"artifacts"`
}

// WorkspaceVersion is one checkpoint's workspace, in GET /v1/runs/{id}/workspace.
type WorkspaceVersion struct {
	CheckpointID string `json:"checkpoint_id"`
	Seq          int64  `json:"seq"`
	Version      string `json:"version"`
	Files        int    `json:"files"`
	Entries      int    `json:"entries"`
	Bytes        int64  `json:"bytes"`
	Href         string `json:"href"`            // the tree's root listing
	Error        string `json:"error,omitempty"` // the manifest could not be read
}

// WorkspaceList is the answer of GET /v1/runs/{id}/workspace.
type WorkspaceList struct {
	Versions []WorkspaceVersion `json:"versions"`
}

// WorkspaceEntry is one node of a workspace directory listing.
type WorkspaceEntry struct {
	Path   string `json:"path"`
	Name   string `json:"name"`
	Type   string `json:"type"` // file, dir or symlink
	Mode   uint32 `json:"mode"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"` // a symlink's target
	Href   string `json:"href"`
}

// WorkspaceDir is a directory listing of GET /v1/runs/{id}/workspace/files.
type WorkspaceDir struct {
	CheckpointID string           `json:"checkpoint_id"`
	Version      string           `json:"version"`
	Path         string           `json:"path"`
	Entries      []WorkspaceEntry `json:"entries"`
}

func callerView(c run.Caller) *run.Caller {
	if c == (run.Caller{}) {
		return nil
	}
	return &c
}
