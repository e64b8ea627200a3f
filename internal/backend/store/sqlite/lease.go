package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// AcquireLease implements store.Leases. An expired lease is free to anyone;
// the owner that holds an unexpired lease may take it again, with a new
// token, so a retried step fences its own earlier attempt.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (run.Run, error) {
	if err := store.ValidateLease(runID, owner, ttl); err != nil {
		return run.Run{}, err
	}
	var out run.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := getRun(ctx, txQuerier{s, tx}, runID)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return fmt.Errorf("sqlite: acquire lease on %q: %w (%s)", runID, store.ErrTerminal, r.Status)
		}
		if r.Status == run.StatusNeedsHuman {
			return fmt.Errorf("sqlite: acquire lease on %q: %w", runID, store.ErrNeedsHuman)
		}
		now := s.clock()
		if r.Lease.Owner != "" && r.Lease.Owner != owner && now.Before(r.Lease.Expiry) {
			return fmt.Errorf("sqlite: acquire lease on %q: %w until %s", runID, store.ErrLeaseHeld, r.Lease.Expiry.Format(time.RFC3339Nano))
		}
		if _, err := s.exec(ctx, tx, `UPDATE runs SET lease_owner = ?, lease_token = lease_token + 1,
			lease_expiry = ?, updated_at = ? WHERE id = ?`,
			owner, now.Add(ttl).UnixNano(), now.UnixNano(), runID); err != nil {
			return fmt.Errorf("sqlite: acquire lease on %q: %w", runID, err)
		}
		out, err = getRun(ctx, txQuerier{s, tx}, runID)
		return err
	})
	if err != nil {
		return run.Run{}, err
	}
	return out, nil
}

// ReleaseLease implements store.Leases. Releasing a lease already released
// with the same token is a no-op; the token is kept so the next holder's is
// higher.
func (s *Store) ReleaseLease(ctx context.Context, runID string, token int64) error {
	if err := store.ValidateID("run id", runID); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var cur int64
		if err := s.queryRow(ctx, tx, `SELECT lease_token FROM runs WHERE id = ?`, runID).Scan(&cur); err != nil {
			if err == sql.ErrNoRows {
				return fmt.Errorf("sqlite: run %q: %w", runID, store.ErrNotFound)
			}
			return fmt.Errorf("sqlite: release lease on %q: %w", runID, err)
		}
		if cur != token {
			return fmt.Errorf("sqlite: release lease on %q: %w (token %d, current %d)", runID, store.ErrFenced, token, cur)
		}
		_, err := s.exec(ctx, tx, `UPDATE runs SET lease_owner = '', lease_expiry = 0, updated_at = ? WHERE id = ?`, s.now(), runID)
		if err != nil {
			return fmt.Errorf("sqlite: release lease on %q: %w", runID, err)
		}
		return nil
	})
}
