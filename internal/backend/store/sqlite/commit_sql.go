package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Hot-path statements, prepared once in Open (see hotQueries).
const (
	qCommitRun = `SELECT rk, status, lease_owner, lease_token, last_seq, last_hash, session_id, cancel_requested, ` +
		lastEventTime + ` FROM runs WHERE id = ?`
	// lastEventTime is the stored time of the run's last event (whole: it
	// stores its hash), 0 when it has none: the base of the next commit's
	// time differences (insertEvents).
	lastEventTime = `COALESCE((SELECT e.time FROM events e WHERE e.ek = (runs.rk << 32) + runs.last_seq), 0)`
	qOpHash       = `SELECT args_hash FROM operations WHERE run_id = ? AND id = ?`
	qOpInsert     = `INSERT INTO operations(run_id, id, plan_item_id, tool, destination, args, args_hash,
			artifact_hash, idempotency_key, status, attempts, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qOpStatus = `SELECT status FROM operations WHERE run_id = ? AND id = ?`
	// qOpUnsettled uses operations_pending (run_id, status).
	qOpUnsettled = `SELECT id, status FROM operations WHERE run_id = ? AND status IN (?, ?) LIMIT 1`
	qOpUpdate    = `UPDATE operations SET status = ?, external_id = ?, result = ?, error = ?,
			attempts = attempts + ?, updated_at = ? WHERE run_id = ? AND id = ?`
	qPlanUpsert = `INSERT INTO plan_items(rk, id, ord, tool, args, args_hash, mode, status,
			call_id, result_ref, result, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(rk, id) DO UPDATE SET ord = excluded.ord, tool = excluded.tool, args = excluded.args,
			args_hash = excluded.args_hash, mode = excluded.mode, status = excluded.status, call_id = excluded.call_id,
			result_ref = excluded.result_ref, result = excluded.result, updated_at = excluded.updated_at`
	// A parent that is the checkpoint before (seq - 1) is stored as NULL:
	// the third argument is the parent's id as that row would store it, the
	// fifth as a parent column does (idKey).
	qCheckpointInsert = `INSERT INTO checkpoints(ck, id, parent, step, state, state_ref, state_hash,
			size, workspace_version, created_at)
			VALUES (?, ?, CASE WHEN ? = (SELECT id FROM checkpoints WHERE ck = ? - 1) THEN NULL ELSE ? END, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`
	qCommitUpdateRun           = `UPDATE runs SET status = ?, ` + commitUpdateRunRest
	qCommitUpdateRunSameStatus = `UPDATE runs SET ` + commitUpdateRunRest
	commitUpdateRunRest        = `output = COALESCE(?, output),
		error = COALESCE(?, error), command = COALESCE(?, command), step_count = step_count + ?,
		checkpoint_id = COALESCE(?, checkpoint_id), last_seq = ?, last_hash = ?,
		tokens_used = tokens_used + ?, spend_used = spend_used + ?, tool_calls_used = tool_calls_used + ?,
		tokens_reserved = MAX(0, tokens_reserved - ?), spend_reserved = MAX(0, spend_reserved - ?),
		tool_calls_reserved = MAX(0, tool_calls_reserved - ?),
		max_steps = CASE WHEN max_steps > 0 THEN max_steps + ? ELSE 0 END,
		max_tool_calls = CASE WHEN max_tool_calls > 0 THEN max_tool_calls + ? ELSE 0 END,
		max_tokens = CASE WHEN max_tokens > 0 THEN max_tokens + ? ELSE 0 END,
		max_spend = CASE WHEN max_spend > 0 THEN max_spend + ? ELSE 0 END,
		lease_owner = CASE WHEN ? THEN '' ELSE lease_owner END,
		lease_expiry = CASE WHEN ? THEN 0 ELSE lease_expiry END, updated_at = ? WHERE id = ?`
)

func strPtr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// blob stores an empty byte slice as NULL so that absent and empty read back
// the same (nil).
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// packed is what a payload column stores for b (codec.pack), NULL for none.
func (s *Store) packed(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return s.pc.pack(b)
}

// stateHashCol is what a checkpoint's state_hash column stores: NULL when
// the state is inline (ValidateCommit made the hash that state's, and
// reading derives it), else the hash.
func stateHashCol(cp *run.Checkpoint) any {
	if len(cp.State) > 0 {
		return nil
	}
	return hashBlob("", cp.StateHash)
}

// argsHashCol is what a plan item's args_hash column stores: NULL when it
// is ArgsHash of the args (reading derives it), else the hash (a legacy
// form, or one given for args not kept). ValidateCommit made or checked
// it: a "jcs:" hash of stored args is theirs.
func argsHashCol(pi run.PlanItem) any {
	if len(pi.Args) > 0 && strings.HasPrefix(pi.ArgsHash, run.ArgsHashPrefix) {
		return nil
	}
	return hashBlob(run.ArgsHashPrefix, pi.ArgsHash)
}

// checkpointExists reports ErrNotFound for a checkpoint the run keyed rk
// does not have.
func checkpointExists(ctx context.Context, q querier, rk int64, runID, id string) error {
	found, err := cpIDIn(ctx, q, rk, id, true, true)
	if err != nil {
		return fmt.Errorf("sqlite: checkpoints %q: %w", id, err)
	}
	if !found {
		return fmt.Errorf("sqlite: checkpoints %q of run %q: %w", id, runID, store.ErrNotFound)
	}
	return nil
}

// rowExists reports ErrNotFound for a missing child row (table is one of
// this package's constants, never input).
func rowExists(ctx context.Context, q querier, table, runID, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM `+table+` WHERE run_id = ? AND id = ?`, runID, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s %q of run %q: %w", table, id, runID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: %s %q: %w", table, id, err)
	}
	return nil
}
