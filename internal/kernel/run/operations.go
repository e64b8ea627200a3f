package run

import (
	"encoding/json"
	"time"
)

// OpStatus is where an external operation stands.
type OpStatus string

// Operation statuses. pending means "may or may not have happened": it is
// reconciled before the run does anything else.
const (
	OpPending    OpStatus = "pending"
	OpSucceeded  OpStatus = "succeeded"
	OpFailed     OpStatus = "failed"
	OpNeedsHuman OpStatus = "needs_human"
)

// Valid reports whether s is a known operation status.
func (s OpStatus) Valid() bool {
	return s == OpPending || s == OpSucceeded || s == OpFailed || s == OpNeedsHuman
}

// Operation is an external side effect, recorded as intent before dispatch.
// Its ID is owned by the application (never the model's tool-call id) and is
// sent to the destination as the idempotency key.
type Operation struct {
	ID             string          `json:"id"`
	RunID          string          `json:"run_id"`
	PlanItemID     string          `json:"plan_item_id"`
	Tool           string          `json:"tool"`
	Destination    string          `json:"destination"`
	Args           json.RawMessage `json:"args,omitempty"`
	ArgsHash       string          `json:"args_hash"`
	ArtifactHash   string          `json:"artifact_hash,omitempty"`
	IdempotencyKey string          `json:"idempotency_key"`
	Status         OpStatus        `json:"status"`
	ExternalID     string          `json:"external_id,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          string          `json:"error,omitempty"`
	Attempts       int64           `json:"attempts"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

// ApprovalStatus is where an approval stands.
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending   ApprovalStatus = "pending"
	ApprovalApproved  ApprovalStatus = "approved"
	ApprovalDenied    ApprovalStatus = "denied"
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// Approval is a request for a person to allow one exact action. A decision is
// accepted only while pending and only for the same ArgsHash.
type Approval struct {
	ID         string          `json:"id"`
	RunID      string          `json:"run_id"`
	SessionID  string          `json:"session_id"`
	PlanItemID string          `json:"plan_item_id"`
	Tool       string          `json:"tool"`
	Mode       Mode            `json:"mode"`
	Args       json.RawMessage `json:"args"`
	ArgsHash   string          `json:"args_hash"`
	Status     ApprovalStatus  `json:"status"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	// TaskToken is the Step Functions task token of the wait, when one is
	// attached; the decision resumes the run through it.
	TaskToken string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
}

// Grant allows a confirm_once tool for the rest of a session.
type Grant struct {
	SessionID  string    `json:"session_id"`
	Tool       string    `json:"tool"`
	ApprovalID string    `json:"approval_id"`
	GrantedBy  string    `json:"granted_by"`
	CreatedAt  time.Time `json:"created_at"`
}
