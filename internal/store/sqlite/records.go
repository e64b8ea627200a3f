package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
)

// listRows runs a query over a run's child rows and scans each; an empty
// result for an unknown run is ErrNotFound.
func listRows[T any](ctx context.Context, q querier, runID, what, query string, scan func(scanner) (T, error), args ...any) ([]T, error) {
	if err := store.ValidateID("run id", runID); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list %s of %q: %w", what, runID, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list %s of %q: %w", what, runID, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list %s of %q: %w", what, runID, err)
	}
	if len(out) == 0 {
		if err := runExists(ctx, q, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func getRow[T any](ctx context.Context, q querier, what, runID, id, query string, scan func(scanner) (T, error)) (T, error) {
	var zero T
	if err := store.ValidateID("run id", runID); err != nil {
		return zero, err
	}
	if err := store.ValidateID(what+" id", id); err != nil {
		return zero, err
	}
	v, err := scan(q.QueryRowContext(ctx, query, runID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return zero, fmt.Errorf("sqlite: %s %q of run %q: %w", what, id, runID, store.ErrNotFound)
	}
	if err != nil {
		return zero, fmt.Errorf("sqlite: get %s %q: %w", what, id, err)
	}
	return v, nil
}

const opColumns = `run_id, id, plan_item_id, tool, destination, args, args_hash, artifact_hash, idempotency_key,
	status, external_id, result, error, attempts, created_at, updated_at`

func scanOp(sc scanner) (run.Operation, error) {
	var op run.Operation
	var args, result []byte
	var created, updated int64
	err := sc.Scan(&op.RunID, &op.ID, &op.PlanItemID, &op.Tool, &op.Destination, &args, &op.ArgsHash, &op.ArtifactHash,
		&op.IdempotencyKey, &op.Status, &op.ExternalID, &result, &op.Error, &op.Attempts, &created, &updated)
	op.Args, op.Result = raw(args), raw(result)
	op.CreatedAt, op.UpdatedAt = ts(created), ts(updated)
	return op, err
}

// raw returns nil for an absent payload, so absent and empty compare equal.
func raw(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// ListOperations implements store.Operations; oldest first is insertion order.
func (s *Store) ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error) {
	if pendingOnly {
		return listRows(ctx, s.r, runID, "operations", `SELECT `+opColumns+` FROM operations
			WHERE run_id = ? AND status = ? ORDER BY rowid`, scanOp, runID, run.OpPending)
	}
	return listRows(ctx, s.r, runID, "operations", `SELECT `+opColumns+` FROM operations
		WHERE run_id = ? ORDER BY rowid`, scanOp, runID)
}

const cpColumns = `run_id, id, seq, parent, step, state, state_ref, state_hash, size, workspace_version, created_at`

func scanCheckpoint(sc scanner) (run.Checkpoint, error) {
	var cp run.Checkpoint
	var state []byte
	var created int64
	err := sc.Scan(&cp.RunID, &cp.ID, &cp.Seq, &cp.Parent, &cp.Step, &state, &cp.StateRef, &cp.StateHash, &cp.Size,
		&cp.WorkspaceVersion, &created)
	cp.State = raw(state)
	cp.CreatedAt = ts(created)
	return cp, err
}

// GetCheckpoint implements store.Checkpoints.
func (s *Store) GetCheckpoint(ctx context.Context, runID, checkpointID string) (run.Checkpoint, error) {
	return getRow(ctx, s.r, "checkpoint", runID, checkpointID,
		`SELECT `+cpColumns+` FROM checkpoints WHERE run_id = ? AND id = ?`, scanCheckpoint)
}

// ListCheckpoints implements store.Checkpoints. A limit of 0 means
// store.MaxEventsPerPage; larger limits are capped to it.
func (s *Store) ListCheckpoints(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Checkpoint, error) {
	limit, err := store.ValidatePage(runID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	return listRows(ctx, s.r, runID, "checkpoints", `SELECT `+cpColumns+` FROM checkpoints
		WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, scanCheckpoint, runID, afterSeq, limit)
}

func scanPlanItem(sc scanner) (run.PlanItem, error) {
	var pi run.PlanItem
	var args, result []byte
	var updated int64
	err := sc.Scan(&pi.RunID, &pi.ID, &pi.Order, &pi.Tool, &args, &pi.ArgsHash, &pi.Mode, &pi.Status, &pi.CallID,
		&pi.ResultRef, &result, &updated)
	pi.Args, pi.Result = raw(args), raw(result)
	pi.UpdatedAt = ts(updated)
	return pi, err
}

// ListPlanItems implements store.Checkpoints, in plan order.
func (s *Store) ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error) {
	return listRows(ctx, s.r, runID, "plan items", `SELECT run_id, id, ord, tool, args, args_hash, mode, status,
		call_id, result_ref, result, updated_at FROM plan_items WHERE run_id = ? ORDER BY ord, id`, scanPlanItem, runID)
}
