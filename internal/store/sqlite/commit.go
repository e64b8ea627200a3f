package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
)

// Commit implements store.Committer: everything in c is validated first, then
// written in one IMMEDIATE transaction after checking the fencing token
// inside it. A token is current only while a lease is held with it: after
// ReleaseLease (or a commit that released it) the old token is stale.
//
// The store fills in: event seqs and zero event times; plan item and
// approval args hashes (computed from the args; a given hash must agree);
// operation idempotency keys (the operation id when empty); a checkpoint's
// Seq (the run's previous checkpoint seq + 1 when zero), Size and StateHash
// (from inline State when zero). A checkpoint id that exists is ErrConflict.
// Used and Released settle the budget as Settle does (a reservation never
// goes below zero; usage is recorded even past a limit).
func (s *Store) Commit(ctx context.Context, c store.Commit) ([]int64, error) {
	if err := validateCommit(&c); err != nil {
		return nil, err
	}
	var seqs []int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		seqs, err = s.commitTx(ctx, tx, &c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return seqs, nil
}

func (s *Store) commitTx(ctx context.Context, tx *sql.Tx, c *store.Commit) ([]int64, error) {
	var (
		status     run.Status
		leaseOwner string
		token      int64
		lastSeq    int64
		sessionID  string
	)
	err := s.queryRow(ctx, tx, qCommitRun,
		c.RunID).Scan(&status, &leaseOwner, &token, &lastSeq, &sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: commit: run %q: %w", c.RunID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: commit to %q: %w", c.RunID, err)
	}
	if token != c.Token || leaseOwner == "" {
		return nil, fmt.Errorf("sqlite: commit to %q: %w (token %d, current %d, held %t)", c.RunID, store.ErrFenced, c.Token, token, leaseOwner != "")
	}
	p := c.Run
	if p != nil && p.Status != "" {
		if err := run.Transition(status, p.Status); err != nil {
			return nil, fmt.Errorf("sqlite: commit to %q: %w", c.RunID, err)
		}
	}
	now := s.clock()
	nowN := now.UnixNano()

	for _, op := range c.NewOperations {
		var hash string
		err := s.queryRow(ctx, tx, qOpHash, c.RunID, op.ID).Scan(&hash)
		switch {
		case err == nil && hash == op.ArgsHash:
			continue // the same intent again
		case err == nil:
			return nil, fmt.Errorf("sqlite: commit: operation %q: %w: exists with args hash %s, not %s", op.ID, store.ErrConflict, hash, op.ArgsHash)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("sqlite: commit: operation %q: %w", op.ID, err)
		}
		if _, err := s.exec(ctx, tx, qOpInsert,
			c.RunID, op.ID, op.PlanItemID, op.Tool, op.Destination, blob(op.Args), op.ArgsHash, op.ArtifactHash,
			op.IdempotencyKey, run.OpPending, op.Attempts, nowN, nowN); err != nil {
			return nil, fmt.Errorf("sqlite: commit: insert operation %q: %w", op.ID, err)
		}
	}
	for _, u := range c.OperationUpdates {
		var st run.OpStatus
		err := s.queryRow(ctx, tx, qOpStatus, c.RunID, u.ID).Scan(&st)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: commit: operation %q: %w", u.ID, store.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: commit: operation %q: %w", u.ID, err)
		}
		if st != run.OpPending {
			return nil, fmt.Errorf("sqlite: commit: operation %q: %w: it is %s, not pending", u.ID, store.ErrConflict, st)
		}
		if _, err := s.exec(ctx, tx, qOpUpdate,
			u.Status, u.ExternalID, blob(u.Result), u.Error, u.AttemptsDelta, nowN, c.RunID, u.ID); err != nil {
			return nil, fmt.Errorf("sqlite: commit: update operation %q: %w", u.ID, err)
		}
	}
	for _, a := range c.NewApprovals {
		var hash, tool string
		err := tx.QueryRowContext(ctx, `SELECT args_hash, tool FROM approvals WHERE run_id = ? AND id = ?`, c.RunID, a.ID).Scan(&hash, &tool)
		switch {
		case err == nil && hash == a.ArgsHash && tool == a.Tool:
			continue
		case err == nil:
			return nil, fmt.Errorf("sqlite: commit: approval %q: %w: exists for other arguments", a.ID, store.ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("sqlite: commit: approval %q: %w", a.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO approvals(run_id, id, session_id, plan_item_id, tool, mode, args,
			args_hash, status, task_token, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.RunID, a.ID, sessionID, a.PlanItemID, a.Tool, a.Mode, blob(a.Args), a.ArgsHash, run.ApprovalPending,
			a.TaskToken, nowN); err != nil {
			return nil, fmt.Errorf("sqlite: commit: insert approval %q: %w", a.ID, err)
		}
	}
	for _, id := range c.CancelApprovals {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_at = ? WHERE run_id = ? AND id = ? AND status = ?`,
			run.ApprovalCancelled, nowN, c.RunID, id, run.ApprovalPending)
		if err != nil {
			return nil, fmt.Errorf("sqlite: commit: cancel approval %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := rowExists(ctx, tx, "approvals", c.RunID, id); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range c.ConsumeInputs {
		res, err := tx.ExecContext(ctx, `UPDATE inputs SET consumed = 1 WHERE run_id = ? AND id = ? AND consumed = 0`, c.RunID, id)
		if err != nil {
			return nil, fmt.Errorf("sqlite: commit: consume input %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := rowExists(ctx, tx, "inputs", c.RunID, id); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("sqlite: commit: input %q: %w: already consumed", id, store.ErrConflict)
		}
	}
	for _, pi := range c.PlanItems {
		if _, err := s.exec(ctx, tx, qPlanUpsert,
			c.RunID, pi.ID, pi.Order, pi.Tool, blob(pi.Args), pi.ArgsHash, pi.Mode, pi.Status,
			pi.CallID, pi.ResultRef, blob(pi.Result), nowN); err != nil {
			return nil, fmt.Errorf("sqlite: commit: plan item %q: %w", pi.ID, err)
		}
	}
	checkpointID := ""
	if p != nil {
		checkpointID = p.CheckpointID
	}
	if cp := c.Checkpoint; cp != nil {
		checkpointID = cp.ID
		seq := any(cp.Seq)
		if cp.Seq == 0 {
			seq = nil // NULL: computed below
		}
		res, err := s.exec(ctx, tx, qCheckpointInsert,
			c.RunID, cp.ID, seq, c.RunID, cp.Parent, cp.Step, blob(cp.State), cp.StateRef, cp.StateHash, cp.Size,
			cp.WorkspaceVersion, nowN)
		if err != nil {
			return nil, fmt.Errorf("sqlite: commit: checkpoint %q: %w", cp.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, fmt.Errorf("sqlite: commit: checkpoint %q: %w: id or seq %d exists", cp.ID, store.ErrConflict, cp.Seq)
		}
	} else if checkpointID != "" {
		if err := rowExists(ctx, tx, "checkpoints", c.RunID, checkpointID); err != nil {
			return nil, err
		}
	}
	seqs, err := s.insertEvents(ctx, tx, c.RunID, lastSeq, c.Events, now)
	if err != nil {
		return nil, err
	}

	// One UPDATE of the run row, with NULL meaning "leave as is".
	var newStatus, output, errText, command, cpID any
	var stepsDelta int64
	release := 0
	if p != nil {
		if p.Status != "" {
			newStatus = p.Status
		}
		output, errText, command = strPtr(p.Output), strPtr(p.Error), strPtr(p.Command)
		stepsDelta = p.StepsDelta
		if p.ReleaseLease {
			release = 1
		}
	}
	if checkpointID != "" {
		cpID = checkpointID
	}
	if _, err := s.exec(ctx, tx, qCommitUpdateRun,
		newStatus, output, errText, command, stepsDelta, cpID, lastSeq+int64(len(c.Events)),
		c.Used.Tokens, c.Used.SpendMicroUSD, c.Used.ToolCalls, c.Released.Tokens, c.Released.SpendMicroUSD, c.Released.ToolCalls,
		release, release, nowN, c.RunID); err != nil {
		return nil, fmt.Errorf("sqlite: commit: update run %q: %w", c.RunID, err)
	}
	return seqs, nil
}

// Hot-path statements, prepared once in Open (see hotQueries).
const (
	qCommitRun = `SELECT status, lease_owner, lease_token, last_seq, session_id FROM runs WHERE id = ?`
	qOpHash    = `SELECT args_hash FROM operations WHERE run_id = ? AND id = ?`
	qOpInsert  = `INSERT INTO operations(run_id, id, plan_item_id, tool, destination, args, args_hash,
			artifact_hash, idempotency_key, status, attempts, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qOpStatus = `SELECT status FROM operations WHERE run_id = ? AND id = ?`
	qOpUpdate = `UPDATE operations SET status = ?, external_id = ?, result = ?, error = ?,
			attempts = attempts + ?, updated_at = ? WHERE run_id = ? AND id = ?`
	qPlanUpsert = `INSERT INTO plan_items(run_id, id, ord, tool, args, args_hash, mode, status,
			call_id, result_ref, result, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(run_id, id) DO UPDATE SET ord = excluded.ord, tool = excluded.tool, args = excluded.args,
			args_hash = excluded.args_hash, mode = excluded.mode, status = excluded.status, call_id = excluded.call_id,
			result_ref = excluded.result_ref, result = excluded.result, updated_at = excluded.updated_at`
	qCheckpointInsert = `INSERT INTO checkpoints(run_id, id, seq, parent, step, state, state_ref, state_hash,
			size, workspace_version, created_at)
			VALUES (?, ?, COALESCE(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE run_id = ?)), ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`
	qCommitUpdateRun = `UPDATE runs SET status = COALESCE(?, status), output = COALESCE(?, output),
		error = COALESCE(?, error), command = COALESCE(?, command), step_count = step_count + ?,
		checkpoint_id = COALESCE(?, checkpoint_id), last_seq = ?,
		tokens_used = tokens_used + ?, spend_used = spend_used + ?, tool_calls_used = tool_calls_used + ?,
		tokens_reserved = MAX(0, tokens_reserved - ?), spend_reserved = MAX(0, spend_reserved - ?),
		tool_calls_reserved = MAX(0, tool_calls_reserved - ?),
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

// validateCommit checks c and fills in the derived fields documented on
// Commit. It writes only to c's own slices' elements (copies made here).
func validateCommit(c *store.Commit) error {
	if err := checkID("run id", c.RunID); err != nil {
		return err
	}
	items := 1 + len(c.Events) + len(c.PlanItems) + len(c.NewOperations) + len(c.OperationUpdates) +
		len(c.NewApprovals) + len(c.CancelApprovals) + len(c.ConsumeInputs)
	if c.Checkpoint != nil {
		items++
	}
	if items > store.MaxItemsPerCommit {
		return invalid("commit writes %d items, over %d", items, store.MaxItemsPerCommit)
	}
	if err := validateEvents(c.Events); err != nil {
		return err
	}
	if err := checkAmounts(c.Used); err != nil {
		return fmt.Errorf("used budget: %w", err)
	}
	if err := checkAmounts(c.Released); err != nil {
		return fmt.Errorf("released budget: %w", err)
	}
	if p := c.Run; p != nil {
		if p.Status != "" && !p.Status.Valid() {
			return invalid("unknown run status %q", p.Status)
		}
		for _, f := range []struct {
			name string
			v    *string
		}{{"output", p.Output}, {"error", p.Error}, {"command", p.Command}} {
			if f.v != nil {
				if err := checkSize(f.name, len(*f.v), store.MaxText); err != nil {
					return err
				}
			}
		}
		if p.StepsDelta < 0 {
			return invalid("negative steps delta %d", p.StepsDelta)
		}
		if err := checkOptional("checkpoint id", p.CheckpointID); err != nil {
			return err
		}
		if c.Checkpoint != nil && p.CheckpointID != "" && p.CheckpointID != c.Checkpoint.ID {
			return invalid("run patch names checkpoint %q but the commit writes %q", p.CheckpointID, c.Checkpoint.ID)
		}
	}
	if c.Checkpoint != nil {
		cp := *c.Checkpoint
		if err := validateCheckpoint(c.RunID, &cp); err != nil {
			return err
		}
		c.Checkpoint = &cp
	}
	seen := map[string]bool{}
	once := func(kind, id string) error {
		if seen[kind+"\x00"+id] {
			return invalid("%s %q appears twice in one commit", kind, id)
		}
		seen[kind+"\x00"+id] = true
		return nil
	}
	if len(c.PlanItems) > 0 {
		items := make([]run.PlanItem, len(c.PlanItems))
		for i, pi := range c.PlanItems {
			if err := validatePlanItem(c.RunID, &pi); err != nil {
				return err
			}
			if err := once("plan item", pi.ID); err != nil {
				return err
			}
			items[i] = pi
		}
		c.PlanItems = items
	}
	if len(c.NewOperations) > 0 {
		ops := make([]run.Operation, len(c.NewOperations))
		for i, op := range c.NewOperations {
			if err := validateNewOperation(c.RunID, &op); err != nil {
				return err
			}
			if err := once("operation", op.ID); err != nil {
				return err
			}
			ops[i] = op
		}
		c.NewOperations = ops
	}
	for _, u := range c.OperationUpdates {
		if err := checkID("operation id", u.ID); err != nil {
			return err
		}
		if u.Status != run.OpSucceeded && u.Status != run.OpFailed && u.Status != run.OpNeedsHuman {
			return invalid("operation %q: status %q is not an outcome (succeeded, failed, needs_human)", u.ID, u.Status)
		}
		if err := checkOptional("operation external id", u.ExternalID); err != nil {
			return err
		}
		if err := checkJSON("operation result", u.Result, store.MaxEventData); err != nil {
			return err
		}
		if err := checkSize("operation error", len(u.Error), store.MaxText); err != nil {
			return err
		}
		if u.AttemptsDelta < 0 {
			return invalid("operation %q: negative attempts delta", u.ID)
		}
		if err := once("operation", u.ID); err != nil {
			return err
		}
	}
	if len(c.NewApprovals) > 0 {
		as := make([]run.Approval, len(c.NewApprovals))
		for i, a := range c.NewApprovals {
			if err := validateNewApproval(c.RunID, &a); err != nil {
				return err
			}
			if err := once("approval", a.ID); err != nil {
				return err
			}
			as[i] = a
		}
		c.NewApprovals = as
	}
	for _, id := range c.CancelApprovals {
		if err := checkID("approval id", id); err != nil {
			return err
		}
		if err := once("approval", id); err != nil {
			return err
		}
	}
	for _, id := range c.ConsumeInputs {
		if err := checkID("input id", id); err != nil {
			return err
		}
		if err := once("input", id); err != nil {
			return err
		}
	}
	return nil
}

func sameRun(runID, got, kind, id string) error {
	if got != "" && got != runID {
		return invalid("%s %q names run %q, not %q", kind, id, got, runID)
	}
	return nil
}

func validateCheckpoint(runID string, cp *run.Checkpoint) error {
	if err := checkID("checkpoint id", cp.ID); err != nil {
		return err
	}
	if err := sameRun(runID, cp.RunID, "checkpoint", cp.ID); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"checkpoint parent", cp.Parent}, {"checkpoint state ref", cp.StateRef},
		{"checkpoint state hash", cp.StateHash}, {"checkpoint workspace version", cp.WorkspaceVersion}} {
		if err := checkOptional(f.name, f.v); err != nil {
			return err
		}
	}
	if err := checkSize("checkpoint state", len(cp.State), store.MaxInlineState); err != nil {
		return err
	}
	if cp.Seq < 0 || cp.Step < 0 || cp.Size < 0 {
		return invalid("checkpoint %q: negative seq, step or size", cp.ID)
	}
	if len(cp.State) > 0 {
		h := run.HashBytes(cp.State)
		if cp.StateHash != "" && cp.StateHash != h {
			return invalid("checkpoint %q: state hash does not match the inline state", cp.ID)
		}
		cp.StateHash = h
		if cp.Size == 0 {
			cp.Size = int64(len(cp.State))
		}
	}
	cp.RunID = runID
	return nil
}

func validatePlanItem(runID string, pi *run.PlanItem) error {
	if err := checkID("plan item id", pi.ID); err != nil {
		return err
	}
	if err := sameRun(runID, pi.RunID, "plan item", pi.ID); err != nil {
		return err
	}
	if err := checkID("plan item tool", pi.Tool); err != nil {
		return err
	}
	if !pi.Mode.Valid() {
		return invalid("plan item %q: unknown mode %q", pi.ID, pi.Mode)
	}
	if pi.Status == "" {
		pi.Status = run.PlanPending
	}
	if !validPlanStatus(pi.Status) {
		return invalid("plan item %q: unknown status %q", pi.ID, pi.Status)
	}
	h, err := argsHash("plan item args", pi.Args, pi.ArgsHash)
	if err != nil {
		return err
	}
	pi.ArgsHash = h
	for _, f := range []struct{ name, v string }{{"plan item call id", pi.CallID}, {"plan item result ref", pi.ResultRef}} {
		if err := checkOptional(f.name, f.v); err != nil {
			return err
		}
	}
	return checkJSON("plan item result", pi.Result, store.MaxEventData)
}

func validateNewOperation(runID string, op *run.Operation) error {
	if err := checkID("operation id", op.ID); err != nil {
		return err
	}
	if err := sameRun(runID, op.RunID, "operation", op.ID); err != nil {
		return err
	}
	if op.Status != "" && op.Status != run.OpPending {
		return invalid("operation %q: a new operation is pending, not %q", op.ID, op.Status)
	}
	if op.Attempts < 0 {
		return invalid("operation %q: negative attempts", op.ID)
	}
	h, err := argsHash("operation args", op.Args, op.ArgsHash)
	if err != nil {
		return err
	}
	if h == "" {
		return invalid("operation %q: no args and no args hash", op.ID)
	}
	op.ArgsHash = h
	if op.IdempotencyKey == "" {
		op.IdempotencyKey = op.ID
	}
	for _, f := range []struct{ name, v string }{{"operation plan item id", op.PlanItemID}, {"operation tool", op.Tool},
		{"operation destination", op.Destination}, {"operation artifact hash", op.ArtifactHash},
		{"operation idempotency key", op.IdempotencyKey}} {
		if err := checkOptional(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func validateNewApproval(runID string, a *run.Approval) error {
	if err := checkID("approval id", a.ID); err != nil {
		return err
	}
	if err := sameRun(runID, a.RunID, "approval", a.ID); err != nil {
		return err
	}
	if err := checkID("approval tool", a.Tool); err != nil {
		return err
	}
	if !a.Mode.Valid() {
		return invalid("approval %q: unknown mode %q", a.ID, a.Mode)
	}
	if a.Status != "" && a.Status != run.ApprovalPending {
		return invalid("approval %q: a new approval is pending, not %q", a.ID, a.Status)
	}
	h, err := argsHash("approval args", a.Args, a.ArgsHash)
	if err != nil {
		return err
	}
	if h == "" {
		return invalid("approval %q: no args and no args hash", a.ID)
	}
	a.ArgsHash = h
	if err := checkOptional("approval plan item id", a.PlanItemID); err != nil {
		return err
	}
	return checkSize("approval task token", len(a.TaskToken), maxTaskToken)
}
