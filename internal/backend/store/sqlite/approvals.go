package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

const approvalColumns = `run_id, id, session_id, plan_item_id, tool, mode, args, args_hash, status, decided_by,
	reason, task_token, created_at, decided_at`

func scanApproval(sc scanner) (run.Approval, error) {
	var a run.Approval
	var args []byte
	var created, decided int64
	err := sc.Scan(&a.RunID, &a.ID, &a.SessionID, &a.PlanItemID, &a.Tool, &a.Mode, &args, &a.ArgsHash, &a.Status,
		&a.DecidedBy, &a.Reason, &a.TaskToken, &created, &decided)
	a.Args = raw(args)
	a.CreatedAt, a.DecidedAt = ts(created), ts(decided)
	return a, err
}

const getApprovalSQL = `SELECT ` + approvalColumns + ` FROM approvals WHERE run_id = ? AND id = ?`

// GetApproval implements store.Approvals.
func (s *Store) GetApproval(ctx context.Context, runID, approvalID string) (run.Approval, error) {
	return getRow(ctx, s.rq, "approval", runID, approvalID, getApprovalSQL, scanApproval)
}

// ListApprovals implements store.Approvals, oldest first.
func (s *Store) ListApprovals(ctx context.Context, runID string) ([]run.Approval, error) {
	return listRows(ctx, s.rq, runID, "approvals", `SELECT `+approvalColumns+` FROM approvals
		WHERE run_id = ? ORDER BY rowid`, scanApproval, runID)
}

// DecideApproval implements store.Approvals in one transaction, the link
// of d.Link spent in it. The check order is store.Approvals'.
func (s *Store) DecideApproval(ctx context.Context, d store.Decision) (run.Approval, error) {
	if err := store.ValidateDecision(d); err != nil {
		return run.Approval{}, err
	}
	var out run.Approval
	err := s.write(ctx, func(tx *sql.Tx) error {
		a, err := getRow(ctx, txQuerier{s, tx}, "approval", d.RunID, d.ApprovalID, getApprovalSQL, scanApproval)
		if err != nil {
			return err
		}
		if d.Link != nil {
			if err := s.spendLink(ctx, tx, d.RunID, *d.Link); err != nil {
				return err
			}
		}
		if a.Status != run.ApprovalPending {
			return fmt.Errorf("sqlite: decide approval %q: %w: it is %s", a.ID, store.ErrConflict, a.Status)
		}
		if a.ArgsHash != d.ArgsHash {
			return fmt.Errorf("sqlite: decide approval %q: %w", a.ID, store.ErrHashMismatch)
		}
		now := s.clock()
		status, evType := run.ApprovalDenied, run.EventApprovalDenied
		if d.Approve {
			status, evType = run.ApprovalApproved, run.EventApprovalGranted
		}
		if _, err := s.exec(ctx, tx, `UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?
			WHERE run_id = ? AND id = ?`, status, d.DecidedBy, d.Reason, now.UnixNano(), d.RunID, d.ApprovalID); err != nil {
			return fmt.Errorf("sqlite: decide approval %q: %w", a.ID, err)
		}
		if d.Approve && a.Mode == run.ModeConfirmOnce {
			if _, err := s.exec(ctx, tx, `INSERT INTO grants(session_id, tool, approval_id, granted_by, created_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id, tool) DO NOTHING`,
				a.SessionID, a.Tool, a.ID, d.DecidedBy, now.UnixNano()); err != nil {
				return fmt.Errorf("sqlite: grant %s to session %q: %w", a.Tool, a.SessionID, err)
			}
		}
		data, err := json.Marshal(map[string]string{"approval_id": a.ID, "decided_by": d.DecidedBy, "args_hash": a.ArgsHash})
		if err != nil {
			return err
		}
		if _, err := s.appendTx(ctx, tx, d.RunID, now, run.Event{Type: evType, PlanItemID: a.PlanItemID, Data: data}); err != nil {
			return err
		}
		out, err = getRow(ctx, txQuerier{s, tx}, "approval", d.RunID, d.ApprovalID, getApprovalSQL, scanApproval)
		return err
	})
	if err != nil {
		return run.Approval{}, err
	}
	return out, nil
}

// AttachTaskToken implements store.Approvals. A later token replaces an
// earlier one: a retried wait state gets a new token.
func (s *Store) AttachTaskToken(ctx context.Context, runID, approvalID, token string) (run.Approval, error) {
	if err := store.ValidateTaskToken(runID, approvalID, token); err != nil {
		return run.Approval{}, err
	}
	var out run.Approval
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE approvals SET task_token = ? WHERE run_id = ? AND id = ?`, token, runID, approvalID)
		if err != nil {
			return fmt.Errorf("sqlite: attach task token to %q: %w", approvalID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: approval %q of run %q: %w", approvalID, runID, store.ErrNotFound)
		}
		out, err = getRow(ctx, txQuerier{s, tx}, "approval", runID, approvalID, getApprovalSQL, scanApproval)
		return err
	})
	if err != nil {
		return run.Approval{}, err
	}
	return out, nil
}

// HasGrant implements store.Approvals.
func (s *Store) HasGrant(ctx context.Context, sessionID, tool string) (bool, error) {
	if err := store.ValidateGrant(sessionID, tool); err != nil {
		return false, err
	}
	var n int
	if err := s.rq.QueryRowContext(ctx, `SELECT COUNT(*) FROM grants WHERE session_id = ? AND tool = ?`, sessionID, tool).Scan(&n); err != nil {
		return false, fmt.Errorf("sqlite: has grant: %w", err)
	}
	return n > 0, nil
}

const (
	qLastSeq    = `SELECT rk, last_seq, last_hash, ` + lastEventTime + ` FROM runs WHERE id = ?`
	qSetLastSeq = `UPDATE runs SET last_seq = ?, last_hash = ?, updated_at = ? WHERE id = ?`
)

// appendTx appends events to a run inside a write transaction, keeping
// last_seq and last_hash in step, and returns their seqs.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, runID string, now time.Time, events ...run.Event) ([]int64, error) {
	var rk, last, lastTime int64
	var prev string
	if err := s.queryRow(ctx, tx, qLastSeq, runID).Scan(&rk, &last, &prev, &lastTime); err != nil {
		if err == sql.ErrNoRows {
			return nil, fmt.Errorf("sqlite: run %q: %w", runID, store.ErrNotFound)
		}
		return nil, fmt.Errorf("sqlite: append events: %w", err)
	}
	seqs, head, err := s.insertEvents(ctx, tx, runID, rk, last, prev, lastTime, events, nil, now)
	if err != nil {
		return nil, err
	}
	if _, err := s.exec(ctx, tx, qSetLastSeq,
		last+int64(len(events)), head, now.UnixNano(), runID); err != nil {
		return nil, fmt.Errorf("sqlite: append events: %w", err)
	}
	return seqs, nil
}
