package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// ResolveRun implements store.Resolver in one IMMEDIATE transaction: the
// run, its plan items, approvals and operations are read and checked
// inside it (store.Resolve), so of a resolution and a settle or cancel
// racing it exactly one finds the run needs_human.
func (s *Store) ResolveRun(ctx context.Context, res store.Resolution) (run.Run, error) {
	if err := store.ValidateResolution(res); err != nil {
		return run.Run{}, err
	}
	var out run.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		q := txQuerier{s, tx}
		r, err := getRun(ctx, q, res.RunID)
		if err != nil {
			return err
		}
		items, err := listRows(ctx, q, res.RunID, "plan items", `SELECT id, ord, tool, args, args_hash, mode, status,
			call_id, result_ref, result, updated_at FROM plan_items WHERE `+byRun+` ORDER BY ord, id`, s.scanPlanItem(res.RunID), res.RunID)
		if err != nil {
			return err
		}
		aps, err := listRows(ctx, q, res.RunID, "approvals", `SELECT `+approvalColumns+` FROM approvals
			WHERE run_id = ? ORDER BY rowid`, scanApproval, res.RunID)
		if err != nil {
			return err
		}
		ops, err := listRows(ctx, q, res.RunID, "operations", `SELECT `+opColumns+` FROM operations
			WHERE run_id = ? ORDER BY rowid`, scanOp, res.RunID)
		if err != nil {
			return err
		}
		now := s.clock()
		changed, events, err := store.Resolve(res, r, items, aps, ops, now)
		if err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		for _, c := range changed {
			a := c.Approval
			var decided int64
			if !a.DecidedAt.IsZero() {
				decided = a.DecidedAt.UnixNano()
			}
			if _, err := s.exec(ctx, tx, `UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?
				WHERE run_id = ? AND id = ? AND status = ?`, a.Status, a.DecidedBy, a.Reason, decided, res.RunID, a.ID, c.From); err != nil {
				return fmt.Errorf("sqlite: resolve %q: approval %q: %w", res.RunID, a.ID, err)
			}
		}
		if _, err := s.appendTx(ctx, tx, res.RunID, now, events...); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `UPDATE runs SET status = ?, error = '', lease_owner = '', lease_expiry = 0,
			updated_at = ? WHERE id = ?`, run.StatusRunning, now.UnixNano(), res.RunID); err != nil {
			return fmt.Errorf("sqlite: resolve %q: %w", res.RunID, err)
		}
		out, err = getRun(ctx, q, res.RunID)
		return err
	})
	if err != nil {
		return run.Run{}, err
	}
	return out, nil
}
