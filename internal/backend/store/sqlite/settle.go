package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// SettleOperation implements store.Settler in one IMMEDIATE transaction:
// the run and the operation are read and checked inside it, so of two
// racing settles exactly one finds the operation needs_human.
func (s *Store) SettleOperation(ctx context.Context, st store.Settlement) (run.Run, error) {
	if err := store.ValidateSettlement(st); err != nil {
		return run.Run{}, err
	}
	var out run.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := getRun(ctx, txQuerier{s, tx}, st.RunID)
		if err != nil {
			return err
		}
		if r.Status != run.StatusNeedsHuman {
			return fmt.Errorf("sqlite: settle %q: %w: the run is %s, not needs_human", st.OperationID, store.ErrConflict, r.Status)
		}
		var opStatus run.OpStatus
		var planItemID string
		err = s.queryRow(ctx, tx, `SELECT status, plan_item_id FROM operations WHERE run_id = ? AND id = ?`,
			st.RunID, st.OperationID).Scan(&opStatus, &planItemID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: settle: operation %q of run %q: %w", st.OperationID, st.RunID, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: settle %q: %w", st.OperationID, err)
		}
		if opStatus != run.OpNeedsHuman {
			return fmt.Errorf("sqlite: settle %q: %w: the operation is %s, not needs_human", st.OperationID, store.ErrConflict, opStatus)
		}
		now := s.clock()
		status, errText := store.SettledOp(st)
		if status != run.OpNeedsHuman {
			if _, err := s.exec(ctx, tx, `UPDATE operations SET status = ?, external_id = ?, result = ?, error = ?,
				updated_at = ? WHERE run_id = ? AND id = ?`, status, st.ExternalID, blob(st.Result), errText,
				now.UnixNano(), st.RunID, st.OperationID); err != nil {
				return fmt.Errorf("sqlite: settle %q: %w", st.OperationID, err)
			}
		}
		events, err := store.SettledEvents(st, planItemID)
		if err != nil {
			return err
		}
		if _, err := s.appendTx(ctx, tx, st.RunID, now, events...); err != nil {
			return err
		}
		next, runErr, err := s.afterSettle(ctx, tx, st)
		if err != nil {
			return err
		}
		if next != run.StatusNeedsHuman {
			if _, err := s.exec(ctx, tx, `UPDATE runs SET status = ?, error = ?, lease_owner = '', lease_expiry = 0,
				updated_at = ? WHERE id = ?`, next, runErr, now.UnixNano(), st.RunID); err != nil {
				return fmt.Errorf("sqlite: settle %q: %w", st.OperationID, err)
			}
		}
		out, err = getRun(ctx, txQuerier{s, tx}, st.RunID)
		return err
	})
	if err != nil {
		return run.Run{}, err
	}
	return out, nil
}

// afterSettle is the run's status after st, with its error: failed on a
// give-up, running once none of its operations is needs_human any more,
// else still needs_human.
func (s *Store) afterSettle(ctx context.Context, tx *sql.Tx, st store.Settlement) (run.Status, string, error) {
	if st.Outcome == store.SettleGiveUp {
		return run.StatusFailed, st.Reason, nil
	}
	var n int
	if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM operations WHERE run_id = ? AND status = ?`,
		st.RunID, run.OpNeedsHuman).Scan(&n); err != nil {
		return "", "", fmt.Errorf("sqlite: settle %q: %w", st.OperationID, err)
	}
	if n > 0 {
		return run.StatusNeedsHuman, "", nil
	}
	return run.StatusRunning, "", nil
}
