package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

const notificationColumns = `run_id, id, kind, approval_id, tool, args_hash, status, attempts, next_at, last_error,
	delivered, link_hash, link_expires_at, link_used_at, created_at, updated_at`

func scanNotification(sc scanner) (run.Notification, error) {
	var n run.Notification
	var delivered string
	var next, expires, used, created, updated int64
	err := sc.Scan(&n.RunID, &n.ID, &n.Kind, &n.ApprovalID, &n.Tool, &n.ArgsHash, &n.Status, &n.Attempts, &next,
		&n.LastError, &delivered, &n.LinkHash, &expires, &used, &created, &updated)
	if delivered != "" {
		n.Delivered = strings.Split(delivered, ",")
	}
	n.NextAttemptAt, n.LinkExpiresAt, n.LinkUsedAt = ts(next), ts(expires), ts(used)
	n.CreatedAt, n.UpdatedAt = ts(created), ts(updated)
	return n, err
}

// insertNotifications writes c's new notifications, due at once; one whose
// id exists is left as it is (a commit retried after an unknown outcome).
func (s *Store) insertNotifications(ctx context.Context, tx *sql.Tx, c *store.Commit, nowN int64) error {
	for _, n := range c.Notifications {
		if _, err := s.exec(ctx, tx, `INSERT INTO notifications(run_id, id, kind, approval_id, tool, args_hash, status,
			next_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, id) DO NOTHING`,
			c.RunID, n.ID, n.Kind, n.ApprovalID, n.Tool, n.ArgsHash, run.NotificationPending, nowN, nowN, nowN); err != nil {
			return fmt.Errorf("sqlite: commit: notification %q: %w", n.ID, err)
		}
	}
	return nil
}

// DueNotifications implements store.Outbox, earliest due first.
func (s *Store) DueNotifications(ctx context.Context, now time.Time, limit int) ([]run.Notification, error) {
	if limit <= 0 || limit > store.MaxRunsPerPage {
		limit = store.MaxRunsPerPage
	}
	rows, err := s.rq.QueryContext(ctx, `SELECT `+notificationColumns+` FROM notifications
		WHERE status = ? AND next_at <= ? ORDER BY next_at LIMIT ?`, run.NotificationPending, nanos(now), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: due notifications: %w", err)
	}
	defer rows.Close()
	var out []run.Notification
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: due notifications: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: due notifications: %w", err)
	}
	return out, nil
}

// ListNotifications implements store.Outbox, oldest first.
func (s *Store) ListNotifications(ctx context.Context, runID string) ([]run.Notification, error) {
	return listRows(ctx, s.rq, runID, "notifications", `SELECT `+notificationColumns+` FROM notifications
		WHERE run_id = ? ORDER BY created_at, id`, scanNotification, runID)
}

// UpdateNotification implements store.Outbox with one conditional UPDATE.
func (s *Store) UpdateNotification(ctx context.Context, n run.Notification, prevAttempts int64) error {
	if err := store.ValidateNotificationUpdate(n, prevAttempts); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE notifications SET status = ?, attempts = ?, next_at = ?, last_error = ?,
			delivered = ?, link_hash = ?, link_expires_at = ?, updated_at = ?
			WHERE run_id = ? AND id = ? AND status = ? AND attempts = ?`,
			n.Status, n.Attempts, nanos(n.NextAttemptAt), n.LastError, strings.Join(n.Delivered, ","), n.LinkHash,
			nanos(n.LinkExpiresAt), s.now(), n.RunID, n.ID, run.NotificationPending, prevAttempts)
		if err != nil {
			return fmt.Errorf("sqlite: update notification %q: %w", n.ID, err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			if err := rowExists(ctx, tx, "notifications", n.RunID, n.ID); err != nil {
				return err
			}
			return fmt.Errorf("sqlite: update notification %q: %w: not pending at attempt %d", n.ID, store.ErrConflict, prevAttempts)
		}
		return nil
	})
}

const getNotificationSQL = `SELECT ` + notificationColumns + ` FROM notifications WHERE run_id = ? AND id = ?`

// spendLink marks the link of notification l.NotificationID used, inside
// the transaction of the decision it carries (DecideApproval); a failed
// check rolls the decision back with it.
func (s *Store) spendLink(ctx context.Context, tx *sql.Tx, runID string, l store.LinkUse) error {
	n, err := getRow(ctx, txQuerier{s, tx}, "notification", runID, l.NotificationID, getNotificationSQL, scanNotification)
	if err != nil {
		return err
	}
	if n.LinkHash == "" || n.LinkHash != l.Hash {
		return fmt.Errorf("sqlite: notification %q has no such link: %w", l.NotificationID, store.ErrNotFound)
	}
	if !n.LinkUsedAt.IsZero() {
		return fmt.Errorf("sqlite: notification %q: %w (at %s)", l.NotificationID, store.ErrLinkUsed, n.LinkUsedAt.Format(time.RFC3339))
	}
	if _, err := s.exec(ctx, tx, `UPDATE notifications SET link_used_at = ?, updated_at = ? WHERE run_id = ? AND id = ?`,
		nanos(l.At), s.now(), runID, l.NotificationID); err != nil {
		return fmt.Errorf("sqlite: notification %q: use link: %w", l.NotificationID, err)
	}
	return nil
}
