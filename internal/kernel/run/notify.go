package run

import "time"

// NotificationKind says what a notification tells a person.
type NotificationKind string

// Notification kinds.
const (
	// NotifyApproval: an approval waits for a decision. The message carries
	// a one-time link bound to the approval and its args hash.
	NotifyApproval NotificationKind = "approval_requested"
	// NotifyNeedsHuman: the run stopped in needs_human.
	NotifyNeedsHuman NotificationKind = "needs_human"
)

// Valid reports whether k is a known kind.
func (k NotificationKind) Valid() bool { return k == NotifyApproval || k == NotifyNeedsHuman }

// NotificationStatus is where a notification's delivery stands.
type NotificationStatus string

// Notification statuses. A notification is pending until every channel
// took it (delivered) or its attempts ran out (failed). Failed is final
// for the notification only: the approval it announced stays pending.
const (
	NotificationPending   NotificationStatus = "pending"
	NotificationDelivered NotificationStatus = "delivered"
	NotificationFailed    NotificationStatus = "failed"
)

// Notification is an outbox record: a message to people, written in the
// commit that made it necessary (an approval requested, a run gone
// needs_human) and delivered at least once, later, by a worker. It holds no
// secret: the approval link's token is stored only as its hash.
type Notification struct {
	ID    string           `json:"id"`
	RunID string           `json:"run_id"`
	Kind  NotificationKind `json:"kind"`
	// ApprovalID, Tool and ArgsHash name the approval a NotifyApproval
	// announces; the link is bound to ApprovalID and ArgsHash.
	ApprovalID string             `json:"approval_id,omitempty"`
	Tool       string             `json:"tool,omitempty"`
	ArgsHash   string             `json:"args_hash,omitempty"`
	Status     NotificationStatus `json:"status"`
	// Attempts counts delivery attempts begun; NextAttemptAt is when the
	// next may begin (a claimed attempt moves it forward, so a worker that
	// dies mid-delivery leaves the notification to be tried again).
	Attempts      int64     `json:"attempts"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error,omitempty"`
	// Delivered lists the channels that took the message, so a retry sends
	// only to the others.
	Delivered []string `json:"delivered,omitempty"`
	// LinkHash is the SHA-256 (hex) of the approval link's token, set at
	// the first attempt; LinkExpiresAt ends the link; LinkUsedAt is when it
	// was answered (once).
	LinkHash      string    `json:"-"`
	LinkExpiresAt time.Time `json:"link_expires_at,omitzero"`
	LinkUsedAt    time.Time `json:"link_used_at,omitzero"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// NotificationID is the id of the notification announcing approval
// approvalID: one approval, one notification, whatever retries a commit.
func NotificationID(approvalID string) string { return "ntf-" + approvalID }
