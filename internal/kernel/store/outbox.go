package store

import (
	"context"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// MaxDeliveryError bounds Notification.LastError.
const MaxDeliveryError = 2 << 10

// Outbox holds the notifications a Commit enqueued (Commit.Notifications)
// until a delivery worker has handed them to their channels. Delivery is
// at least once: a worker claims an attempt (UpdateNotification with
// Attempts+1 and NextAttemptAt moved past the attempt's end) before it
// sends, so a worker that dies mid-delivery leaves the notification due
// again, and several workers never send one attempt twice.
type Outbox interface {
	// DueNotifications returns up to limit pending notifications of any
	// run whose NextAttemptAt is not after now, oldest first.
	DueNotifications(ctx context.Context, now time.Time, limit int) ([]run.Notification, error)
	// ListNotifications returns the run's notifications, oldest first.
	ListNotifications(ctx context.Context, runID string) ([]run.Notification, error)
	// UpdateNotification stores n's delivery state (Status, Attempts,
	// NextAttemptAt, LastError, Delivered, LinkHash, LinkExpiresAt) if the
	// stored notification is pending with Attempts == prevAttempts;
	// ErrConflict otherwise (another worker claimed it, or it is
	// finished), ErrNotFound when it does not exist.
	UpdateNotification(ctx context.Context, n run.Notification, prevAttempts int64) error
}

// validateNotification checks a new notification of a commit and fills in
// its defaults: the run, status pending.
func validateNotification(runID string, n *run.Notification) error {
	if err := ValidateID("notification id", n.ID); err != nil {
		return err
	}
	if n.RunID != "" && n.RunID != runID {
		return invalid("notification %q names run %q, not %q", n.ID, n.RunID, runID)
	}
	if !n.Kind.Valid() {
		return invalid("notification %q: unknown kind %q", n.ID, n.Kind)
	}
	if n.Kind == run.NotifyApproval {
		if err := checkIDs(field{"notification approval id", n.ApprovalID}, field{"notification args hash", n.ArgsHash},
			field{"notification tool", n.Tool}); err != nil {
			return err
		}
	}
	n.RunID, n.Status, n.Attempts, n.LastError, n.Delivered = runID, run.NotificationPending, 0, "", nil
	n.LinkHash, n.LinkExpiresAt, n.LinkUsedAt = "", time.Time{}, time.Time{}
	return nil
}

// ValidateNotificationUpdate checks the input of Outbox.UpdateNotification.
func ValidateNotificationUpdate(n run.Notification, prevAttempts int64) error {
	if err := checkIDs(field{"run id", n.RunID}, field{"notification id", n.ID}); err != nil {
		return err
	}
	switch n.Status {
	case run.NotificationPending, run.NotificationDelivered, run.NotificationFailed:
	default:
		return invalid("notification %q: unknown status %q", n.ID, n.Status)
	}
	if prevAttempts < 0 || n.Attempts < prevAttempts {
		return invalid("notification %q: attempts %d before %d", n.ID, n.Attempts, prevAttempts)
	}
	if err := checkSize("notification error", len(n.LastError), MaxDeliveryError); err != nil {
		return err
	}
	for _, ch := range n.Delivered {
		if err := ValidateID("notification channel", ch); err != nil {
			return err
		}
	}
	return checkOptional("link hash", n.LinkHash)
}
