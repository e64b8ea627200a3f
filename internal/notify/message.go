package notify

import (
	"context"
	"encoding/json"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Channel hands one message to people. Send must not put a secret of its
// own (a URL with a token, a password) into the error it returns: the
// worker stores that text on the notification. A Channel is used by one
// worker at a time per message, and may be called again with the same
// DeliveryID after an error or a crash (at least once).
type Channel interface {
	// Name is the channel's stable name (webhook, slack, email), recorded
	// in Notification.Delivered.
	Name() string
	Send(ctx context.Context, m Message) error
}

// Message is what every channel renders: the notification, its run and,
// for an approval, the exact action and the one-time link.
type Message struct {
	// DeliveryID is the notification id: the same on every attempt, for
	// the receiver's deduplication.
	DeliveryID string          `json:"delivery_id"`
	Kind       string          `json:"kind"`
	RunID      string          `json:"run_id"`
	Agent      string          `json:"agent,omitempty"`
	Request    string          `json:"request,omitempty"`
	Status     string          `json:"run_status,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	ApprovalID string          `json:"approval_id,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	ArgsHash   string          `json:"args_hash,omitempty"`
	// Link approves or denies without a bearer token, once, until
	// LinkExpiresAt.
	Link          string    `json:"link,omitempty"`
	LinkExpiresAt time.Time `json:"link_expires_at,omitzero"`
	CreatedAt     time.Time `json:"created_at"`
}

// Subject is a one-line summary for e-mail subjects and chat previews,
// control and bidi characters escaped (visible).
func (m Message) Subject() string {
	if m.Kind == string(run.NotifyApproval) {
		return visible("Keel: approval needed for " + m.Tool + " (run " + m.RunID + ")")
	}
	return visible("Keel: run " + m.RunID + " needs a person")
}

// Text is the plain-text body of the e-mail channel. Every value from a
// run (agent, tool, arguments, reason) has its control and bidi
// characters escaped (visible): a mail client shows what the arguments
// hold.
func (m Message) Text() string {
	s := m.Subject() + "\n\n"
	if m.Agent != "" {
		s += "Agent: " + visible(m.Agent) + "\n"
	}
	if m.Kind == string(run.NotifyApproval) {
		s += "Tool: " + visible(m.Tool) + "\nArgs: " + visible(string(m.Args)) + "\nArgs hash: " + visible(m.ArgsHash) + "\n"
		if m.Link != "" {
			s += "\nApprove or deny (works once, until " + m.LinkExpiresAt.UTC().Format(time.RFC3339) + "):\n" + m.Link + "\n"
		}
		return s
	}
	if m.Reason != "" {
		s += "Why: " + visible(m.Reason) + "\n"
	}
	return s + "\nSee `keel explain " + m.RunID + "`, then `keel settle`.\n"
}
