package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// RequestCancel implements store.Control. Asking again is recorded again
// (another cancel_requested event); approvals already decided are left alone.
func (s *Store) RequestCancel(ctx context.Context, runID, by string) (run.Run, []run.Approval, error) {
	if err := store.ValidateCancel(runID, by); err != nil {
		return run.Run{}, nil, err
	}
	var out run.Run
	var cancelled []run.Approval
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := getRun(ctx, txQuerier{s, tx}, runID)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return fmt.Errorf("sqlite: cancel %q: %w (%s)", runID, store.ErrTerminal, r.Status)
		}
		pending, err := listRows(ctx, txQuerier{s, tx}, runID, "approvals", `SELECT `+approvalColumns+` FROM approvals
			WHERE run_id = ? AND status = ? ORDER BY rowid`, scanApproval, runID, run.ApprovalPending)
		if err != nil {
			return err
		}
		if r.CancelRequested && len(pending) == 0 && r.Status != run.StatusNeedsHuman {
			out = r // asked before: nothing new to record
			return nil
		}
		now := s.clock()
		data, err := json.Marshal(map[string]string{"by": by})
		if err != nil {
			return err
		}
		events := []run.Event{{Type: run.EventCancelRequested, Data: data}}
		for i := range pending {
			a := &pending[i]
			if _, err := s.exec(ctx, tx, `UPDATE approvals SET status = ?, decided_by = ?, reason = 'run cancelled',
				decided_at = ? WHERE run_id = ? AND id = ?`, run.ApprovalCancelled, by, now.UnixNano(), runID, a.ID); err != nil {
				return fmt.Errorf("sqlite: cancel approval %q: %w", a.ID, err)
			}
			a.Status, a.DecidedBy, a.Reason, a.DecidedAt = run.ApprovalCancelled, by, "run cancelled", now.UTC()
			d, err := json.Marshal(map[string]string{"approval_id": a.ID, "by": by})
			if err != nil {
				return err
			}
			events = append(events, run.Event{Type: run.EventApprovalCancelled, PlanItemID: a.PlanItemID, Data: d})
		}
		if _, err := s.exec(ctx, tx, `UPDATE runs SET cancel_requested = 1 WHERE id = ?`, runID); err != nil {
			return fmt.Errorf("sqlite: cancel %q: %w", runID, err)
		}
		if r.Status == run.StatusNeedsHuman {
			// No worker may take it: the person's cancel ends it here.
			ev, err := store.CancelledByPerson(by)
			if err != nil {
				return err
			}
			events = append(events, ev)
			if _, err := s.exec(ctx, tx, `UPDATE runs SET status = ?, lease_owner = '', lease_expiry = 0, updated_at = ?
				WHERE id = ?`, run.StatusCancelled, now.UnixNano(), runID); err != nil {
				return fmt.Errorf("sqlite: cancel %q: %w", runID, err)
			}
		}
		if _, err := s.appendTx(ctx, tx, runID, now, events...); err != nil {
			return err
		}
		cancelled = pending
		out, err = getRun(ctx, txQuerier{s, tx}, runID)
		return err
	})
	if err != nil {
		return run.Run{}, nil, err
	}
	return out, cancelled, nil
}

// EnqueueInput implements store.Control. The input id is generated here.
func (s *Store) EnqueueInput(ctx context.Context, runID, text string) (run.Input, error) {
	if err := store.ValidateInput(runID, text); err != nil {
		return run.Input{}, err
	}
	in := run.Input{RunID: runID, ID: run.NewID("in"), Text: text}
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := getRun(ctx, txQuerier{s, tx}, runID)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return fmt.Errorf("sqlite: input for %q: %w (%s)", runID, store.ErrTerminal, r.Status)
		}
		now := s.clock()
		in.ReceivedAt = now.UTC()
		if _, err := s.exec(ctx, tx, `INSERT INTO inputs(run_id, id, text, received_at) VALUES (?, ?, ?, ?)`,
			runID, in.ID, text, now.UnixNano()); err != nil {
			return fmt.Errorf("sqlite: input for %q: %w", runID, err)
		}
		// The event names the input; the text stays in its own row.
		data, err := json.Marshal(map[string]any{"input_id": in.ID, "bytes": len(text)})
		if err != nil {
			return err
		}
		_, err = s.appendTx(ctx, tx, runID, now, run.Event{Type: run.EventInputReceived, Data: data})
		return err
	})
	if err != nil {
		return run.Input{}, err
	}
	return in, nil
}

func scanInput(sc scanner) (run.Input, error) {
	var in run.Input
	var consumed int
	var received int64
	err := sc.Scan(&in.RunID, &in.ID, &in.Text, &consumed, &received)
	in.Consumed = consumed != 0
	in.ReceivedAt = ts(received)
	return in, err
}

// ListInputs implements store.Control.
func (s *Store) ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error) {
	q := `SELECT run_id, id, text, consumed, received_at FROM inputs WHERE run_id = ?`
	if pendingOnly {
		q += ` AND consumed = 0`
	}
	return listRows(ctx, s.rq, runID, "inputs", q+` ORDER BY rowid`, scanInput, runID)
}
