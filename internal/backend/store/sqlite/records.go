package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
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

// getRow reads the row of query (arguments: runID, then key's, or id when
// key is none) with scan.
func getRow[T any](ctx context.Context, q querier, what, runID, id, query string, scan func(scanner) (T, error), key ...any) (T, error) {
	var zero T
	if err := store.ValidateID("run id", runID); err != nil {
		return zero, err
	}
	if err := store.ValidateID(what+" id", id); err != nil {
		return zero, err
	}
	args := []any{runID, id}
	if len(key) > 0 {
		args = append(args[:1], key...)
	}
	v, err := scan(q.QueryRowContext(ctx, query, args...))
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
		return listRows(ctx, s.rq, runID, "operations", `SELECT `+opColumns+` FROM operations
			WHERE run_id = ? AND status = ? ORDER BY rowid`, scanOp, runID, run.OpPending)
	}
	return listRows(ctx, s.rq, runID, "operations", `SELECT `+opColumns+` FROM operations
		WHERE run_id = ? ORDER BY rowid`, scanOp, runID)
}

// cpColumns are a checkpoint's, of the row c: a NULL parent is the
// checkpoint before it.
const cpColumns = `c.id, c.ck & 4294967295, COALESCE(c.parent, (SELECT p.id FROM checkpoints p WHERE p.ck = c.ck - 1), ''),
	c.step, c.state, c.state_ref, c.state_hash, c.size, c.workspace_version, c.created_at`

// byRun selects a child table's rows of the run whose id is the first
// argument.
const byRun = `rk = (SELECT rk FROM runs WHERE id = ?)`

func (s *Store) scanCheckpoint(runID string) func(sc scanner) (run.Checkpoint, error) {
	return func(sc scanner) (run.Checkpoint, error) {
		cp := run.Checkpoint{RunID: runID}
		var id, parent, hash any
		var state []byte
		var created int64
		if err := sc.Scan(&id, &cp.Seq, &parent, &cp.Step, &state, &cp.StateRef, &hash, &cp.Size,
			&cp.WorkspaceVersion, &created); err != nil {
			return cp, err
		}
		cp.ID, cp.Parent = cpIDText(id, cp.Seq), cpIDText(parent, cp.Seq-1)
		var err error
		if cp.State, err = s.pc.unpack(state); err != nil {
			return cp, fmt.Errorf("checkpoint %q: %w", cp.ID, err)
		}
		cp.StateHash = hashText("", hash)
		if hash == nil && len(cp.State) > 0 {
			cp.StateHash = run.HashBytes(cp.State) // stored as NULL: derived (0006)
		}
		cp.CreatedAt = ts(created)
		return cp, nil
	}
}

// GetCheckpoint implements store.Checkpoints.
func (s *Store) GetCheckpoint(ctx context.Context, runID, checkpointID string) (run.Checkpoint, error) {
	where := cpWhere(checkpointID)
	return getRow(ctx, s.rq, "checkpoint", runID, checkpointID,
		`SELECT `+cpColumns+` FROM checkpoints c WHERE `+cpByRunID,
		s.scanCheckpoint(runID), where...)
}

// ListCheckpoints implements store.Checkpoints. A limit of 0 means
// store.MaxEventsPerPage; larger limits are capped to it.
func (s *Store) ListCheckpoints(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Checkpoint, error) {
	limit, err := store.ValidatePage(runID, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	return listRows(ctx, s.rq, runID, "checkpoints", `WITH r AS (SELECT rk << 32 AS base FROM runs WHERE id = ?)
		SELECT `+cpColumns+` FROM r JOIN checkpoints c ON c.ck > r.base + ? AND c.ck < r.base + 4294967296
		ORDER BY c.ck LIMIT ?`, s.scanCheckpoint(runID), runID, afterSeq, limit)
}

func (s *Store) scanPlanItem(runID string) func(sc scanner) (run.PlanItem, error) {
	return func(sc scanner) (run.PlanItem, error) {
		pi := run.PlanItem{RunID: runID}
		var id, hash, mode, status any
		var args, result []byte
		var updated int64
		if err := sc.Scan(&id, &pi.Order, &pi.Tool, &args, &hash, &mode, &status, &pi.CallID,
			&pi.ResultRef, &result, &updated); err != nil {
			return pi, err
		}
		pi.ID = idText(itemPrefix, id)
		var err error
		if pi.Args, err = s.pc.unpack(args); err != nil {
			return pi, fmt.Errorf("plan item %q: args: %w", pi.ID, err)
		}
		if pi.Result, err = s.pc.unpack(result); err != nil {
			return pi, fmt.Errorf("plan item %q: result: %w", pi.ID, err)
		}
		if pi.Mode, err = enumName(modeCodes, mode); err != nil {
			return pi, fmt.Errorf("plan item %q: mode: %w", pi.ID, err)
		}
		if pi.Status, err = enumName(statusCodes, status); err != nil {
			return pi, fmt.Errorf("plan item %q: status: %w", pi.ID, err)
		}
		pi.ArgsHash = hashText(run.ArgsHashPrefix, hash)
		if hash == nil && len(pi.Args) > 0 {
			// Stored as NULL: it was ArgsHash of these args (0006).
			if pi.ArgsHash, err = run.ArgsHash(pi.Args); err != nil {
				return pi, fmt.Errorf("plan item %q: args hash: %w", pi.ID, err)
			}
		}
		pi.UpdatedAt = ts(updated)
		return pi, nil
	}
}

// ListPlanItems implements store.Checkpoints, in plan order.
func (s *Store) ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error) {
	return listRows(ctx, s.rq, runID, "plan items", `SELECT id, ord, tool, args, args_hash, mode, status,
		call_id, result_ref, result, updated_at FROM plan_items WHERE `+byRun+` ORDER BY ord, id`, s.scanPlanItem(runID), runID)
}
