package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
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
	seqs, _, err := s.CommitSignals(ctx, c)
	return seqs, err
}

// CommitSignals is Commit that also returns the run's signals as the
// commit left them (read in its transaction): a step that goes on at once
// needs no read of its own to see a cancel request or a lost lease.
func (s *Store) CommitSignals(ctx context.Context, c store.Commit) ([]int64, store.RunSignals, error) {
	if err := store.ValidateCommit(&c); err != nil {
		return nil, store.RunSignals{}, err
	}
	var seqs []int64
	var sig store.RunSignals
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		seqs, err = s.commitTx(ctx, tx, &c, &sig)
		return err
	})
	if err != nil {
		return nil, store.RunSignals{}, err
	}
	return seqs, sig, nil
}

// commitTx writes c in tx and sets *sig to the run's signals after it. The
// statements run in a fixed order (run row read, operations, approvals,
// inputs, plan items, checkpoint, events, one run row UPDATE): each helper
// below is one step of it, taking the transaction and the commit.
func (s *Store) commitTx(ctx context.Context, tx *sql.Tx, c *store.Commit, sig *store.RunSignals) ([]int64, error) {
	r, err := s.fencedRun(ctx, tx, c)
	if err != nil {
		return nil, err
	}
	p := c.Run
	now := s.clock()
	nowN := now.UnixNano()

	if err := s.insertOperations(ctx, tx, c, nowN); err != nil {
		return nil, err
	}
	if err := s.updateOperations(ctx, tx, c, nowN); err != nil {
		return nil, err
	}
	if p != nil && p.Status.Terminal() {
		if err := s.settled(ctx, tx, c.RunID, p.Status); err != nil {
			return nil, err
		}
	}
	if err := s.insertApprovals(ctx, tx, c, r.sessionID, nowN); err != nil {
		return nil, err
	}
	if err := s.cancelApprovals(ctx, tx, c, nowN); err != nil {
		return nil, err
	}
	if err := s.insertNotifications(ctx, tx, c, nowN); err != nil {
		return nil, err
	}
	if err := s.consumeInputs(ctx, tx, c); err != nil {
		return nil, err
	}
	if err := s.upsertPlanItems(ctx, tx, c, r.rk, nowN); err != nil {
		return nil, err
	}
	checkpointID, err := s.commitCheckpoint(ctx, tx, c, r.rk, nowN)
	if err != nil {
		return nil, err
	}
	seqs, head, err := s.insertEvents(ctx, tx, c.RunID, r.rk, r.lastSeq, r.lastHash, r.lastTime, c.Events, c.Checkpoint, now)
	if err != nil {
		return nil, err
	}
	if err := s.updateCommitRun(ctx, tx, c, r, checkpointID, head, nowN); err != nil {
		return nil, err
	}
	*sig = store.RunSignals{CancelRequested: r.cancel != 0, LeaseToken: r.token, Status: r.status}
	if p != nil && p.Status != "" {
		sig.Status = p.Status
	}
	return seqs, nil
}

// commitRun is the run row as a commit reads it first (qCommitRun).
type commitRun struct {
	rk         int64
	status     run.Status
	leaseOwner string
	token      int64
	lastSeq    int64
	lastHash   string
	sessionID  string
	cancel     int
	lastTime   int64
}

// fencedRun reads the run row and refuses the commit unless its token is
// the lease's current one and the status change c asks for is allowed.
func (s *Store) fencedRun(ctx context.Context, tx *sql.Tx, c *store.Commit) (commitRun, error) {
	var r commitRun
	err := s.queryRow(ctx, tx, qCommitRun,
		c.RunID).Scan(&r.rk, &r.status, &r.leaseOwner, &r.token, &r.lastSeq, &r.lastHash, &r.sessionID, &r.cancel, &r.lastTime)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("sqlite: commit: run %q: %w", c.RunID, store.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("sqlite: commit to %q: %w", c.RunID, err)
	}
	if r.token != c.Token || r.leaseOwner == "" {
		return r, fmt.Errorf("sqlite: commit to %q: %w (token %d, current %d, held %t)", c.RunID, store.ErrFenced, c.Token, r.token, r.leaseOwner != "")
	}
	if p := c.Run; p != nil && p.Status != "" {
		if err := run.Transition(r.status, p.Status); err != nil {
			return r, fmt.Errorf("sqlite: commit to %q: %w", c.RunID, err)
		}
	}
	return r, nil
}

// insertOperations records c's new operations; one that exists with the
// same args hash is the same intent again and is left as is.
func (s *Store) insertOperations(ctx context.Context, tx *sql.Tx, c *store.Commit, nowN int64) error {
	for _, op := range c.NewOperations {
		var hash string
		err := s.queryRow(ctx, tx, qOpHash, c.RunID, op.ID).Scan(&hash)
		switch {
		case err == nil && hash == op.ArgsHash:
			continue // the same intent again
		case err == nil:
			return fmt.Errorf("sqlite: commit: operation %q: %w: exists with args hash %s, not %s", op.ID, store.ErrConflict, hash, op.ArgsHash)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("sqlite: commit: operation %q: %w", op.ID, err)
		}
		if _, err := s.exec(ctx, tx, qOpInsert,
			c.RunID, op.ID, op.PlanItemID, op.Tool, op.Destination, blob(op.Args), op.ArgsHash, op.ArtifactHash,
			op.IdempotencyKey, run.OpPending, op.Attempts, nowN, nowN); err != nil {
			return fmt.Errorf("sqlite: commit: insert operation %q: %w", op.ID, err)
		}
	}
	return nil
}

// updateOperations applies c's operation updates; only a pending
// operation may change.
func (s *Store) updateOperations(ctx context.Context, tx *sql.Tx, c *store.Commit, nowN int64) error {
	for _, u := range c.OperationUpdates {
		var st run.OpStatus
		err := s.queryRow(ctx, tx, qOpStatus, c.RunID, u.ID).Scan(&st)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: commit: operation %q: %w", u.ID, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: commit: operation %q: %w", u.ID, err)
		}
		if st != run.OpPending {
			return fmt.Errorf("sqlite: commit: operation %q: %w: it is %s, not pending", u.ID, store.ErrConflict, st)
		}
		if _, err := s.exec(ctx, tx, qOpUpdate,
			u.Status, u.ExternalID, blob(u.Result), u.Error, u.AttemptsDelta, nowN, c.RunID, u.ID); err != nil {
			return fmt.Errorf("sqlite: commit: update operation %q: %w", u.ID, err)
		}
	}
	return nil
}

// insertApprovals records c's new approvals in the run's session; one that
// exists for the same tool and args is left as is.
func (s *Store) insertApprovals(ctx context.Context, tx *sql.Tx, c *store.Commit, sessionID string, nowN int64) error {
	for _, a := range c.NewApprovals {
		var hash, tool string
		err := s.queryRow(ctx, tx, `SELECT args_hash, tool FROM approvals WHERE run_id = ? AND id = ?`, c.RunID, a.ID).Scan(&hash, &tool)
		switch {
		case err == nil && hash == a.ArgsHash && tool == a.Tool:
			continue
		case err == nil:
			return fmt.Errorf("sqlite: commit: approval %q: %w: exists for other arguments", a.ID, store.ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("sqlite: commit: approval %q: %w", a.ID, err)
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO approvals(run_id, id, session_id, plan_item_id, tool, mode, args,
			args_hash, status, task_token, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.RunID, a.ID, sessionID, a.PlanItemID, a.Tool, a.Mode, blob(a.Args), a.ArgsHash, run.ApprovalPending,
			a.TaskToken, nowN); err != nil {
			return fmt.Errorf("sqlite: commit: insert approval %q: %w", a.ID, err)
		}
	}
	return nil
}

// cancelApprovals cancels c's pending approvals; one already decided is
// left as is, one missing is ErrNotFound.
func (s *Store) cancelApprovals(ctx context.Context, tx *sql.Tx, c *store.Commit, nowN int64) error {
	for _, id := range c.CancelApprovals {
		res, err := s.exec(ctx, tx, `UPDATE approvals SET status = ?, decided_at = ? WHERE run_id = ? AND id = ? AND status = ?`,
			run.ApprovalCancelled, nowN, c.RunID, id, run.ApprovalPending)
		if err != nil {
			return fmt.Errorf("sqlite: commit: cancel approval %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := rowExists(ctx, tx, "approvals", c.RunID, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// consumeInputs marks c's inputs consumed; one consumed already is
// ErrConflict, so an input is taken once.
func (s *Store) consumeInputs(ctx context.Context, tx *sql.Tx, c *store.Commit) error {
	for _, id := range c.ConsumeInputs {
		res, err := s.exec(ctx, tx, `UPDATE inputs SET consumed = 1 WHERE run_id = ? AND id = ? AND consumed = 0`, c.RunID, id)
		if err != nil {
			return fmt.Errorf("sqlite: commit: consume input %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := rowExists(ctx, tx, "inputs", c.RunID, id); err != nil {
				return err
			}
			return fmt.Errorf("sqlite: commit: input %q: %w: already consumed", id, store.ErrConflict)
		}
	}
	return nil
}

// upsertPlanItems writes c's plan items of the run keyed rk.
func (s *Store) upsertPlanItems(ctx context.Context, tx *sql.Tx, c *store.Commit, rk, nowN int64) error {
	for _, pi := range c.PlanItems {
		if _, err := s.exec(ctx, tx, qPlanUpsert,
			rk, idKey(itemPrefix, pi.ID), pi.Order, pi.Tool, s.packed(pi.Args), argsHashCol(pi), enumCode(modeCodes, pi.Mode),
			enumCode(statusCodes, pi.Status), pi.CallID, pi.ResultRef, s.packed(pi.Result), nowN); err != nil {
			return fmt.Errorf("sqlite: commit: plan item %q: %w", pi.ID, err)
		}
	}
	return nil
}

// commitCheckpoint inserts c's new checkpoint, or checks that the one the
// run update names exists, and returns the id the run row is to name ("" to
// leave it).
func (s *Store) commitCheckpoint(ctx context.Context, tx *sql.Tx, c *store.Commit, rk, nowN int64) (string, error) {
	checkpointID := ""
	if c.Run != nil {
		checkpointID = c.Run.CheckpointID
	}
	if cp := c.Checkpoint; cp != nil {
		return cp.ID, s.insertCheckpoint(ctx, tx, cp, rk, nowN)
	}
	if checkpointID != "" {
		if err := checkpointExists(ctx, txQuerier{s, tx}, rk, c.RunID, checkpointID); err != nil {
			return "", err
		}
	}
	return checkpointID, nil
}

// insertCheckpoint inserts cp as the run keyed rk's checkpoint, at the
// seq after its last when cp names none; an id or seq taken is ErrConflict.
func (s *Store) insertCheckpoint(ctx context.Context, tx *sql.Tx, cp *run.Checkpoint, rk, nowN int64) error {
	seq := cp.Seq
	if seq == 0 {
		// The run's last checkpoint's seq + 1 (the harness always says).
		if err := s.queryRow(ctx, tx, `SELECT COALESCE(MAX(ck), ? << 32) + 1 - (? << 32) FROM checkpoints
			WHERE ck > ? << 32 AND ck < (? + 1) << 32`, rk, rk, rk, rk).Scan(&seq); err != nil {
			return fmt.Errorf("sqlite: commit: checkpoint %q: %w", cp.ID, err)
		}
	}
	if err := checkKey(rk, seq); err != nil {
		return fmt.Errorf("sqlite: commit: checkpoint %q: %w", cp.ID, err)
	}
	// The unique index holds only ids not stored derived (cpid.go): an
	// id is taken if the run has it in the other form too.
	if taken, err := cpIDTaken(ctx, txQuerier{s, tx}, rk, cp.ID, seq); err != nil || taken {
		if err == nil {
			err = fmt.Errorf("%w: id exists", store.ErrConflict)
		}
		return fmt.Errorf("sqlite: commit: checkpoint %q: %w", cp.ID, err)
	}
	res, err := s.exec(ctx, tx, qCheckpointInsert,
		rk<<32|seq, cpIDCol(cp.ID, seq), cpIDCol(cp.Parent, seq-1), rk<<32|seq, idKey(cpPrefix, cp.Parent), cp.Step, s.packed(cp.State),
		cp.StateRef, stateHashCol(cp), cp.Size, cp.WorkspaceVersion, nowN)
	if err != nil {
		return fmt.Errorf("sqlite: commit: checkpoint %q: %w", cp.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: commit: checkpoint %q: %w: id or seq %d exists", cp.ID, store.ErrConflict, seq)
	}
	return nil
}

// updateCommitRun is the commit's one UPDATE of the run row, with NULL
// meaning "leave as is": status, outputs, step count, checkpoint, event
// head, budget and lease.
func (s *Store) updateCommitRun(ctx context.Context, tx *sql.Tx, c *store.Commit, r commitRun, checkpointID, head string, nowN int64) error {
	var newStatus, output, errText, command, cpID any
	var stepsDelta int64
	var raise run.Limits
	release := 0
	if p := c.Run; p != nil {
		raise = p.RaiseLimits
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
	// Naming status in SET rewrites its index entry (runs_status_created)
	// even when the value stays: one more page, and WAL frame, per commit.
	// A plain step changes no status, so it uses the variant without it.
	q, statusArg := qCommitUpdateRunSameStatus, []any{}
	if newStatus != nil {
		q, statusArg = qCommitUpdateRun, []any{newStatus}
	}
	if _, err := s.exec(ctx, tx, q, append(statusArg,
		output, errText, command, stepsDelta, cpID, r.lastSeq+int64(len(c.Events)), head,
		c.Used.Tokens, c.Used.SpendMicroUSD, c.Used.ToolCalls, c.Released.Tokens, c.Released.SpendMicroUSD, c.Released.ToolCalls,
		raise.MaxSteps, raise.MaxToolCalls, raise.MaxTokens, raise.MaxSpendMicroUSD,
		release, release, nowN, c.RunID)...); err != nil {
		return fmt.Errorf("sqlite: commit: update run %q: %w", c.RunID, err)
	}
	return nil
}

// settled refuses to end the run while one of its operations, as this
// transaction has left them, is pending or needs_human (ErrUnsettled).
func (s *Store) settled(ctx context.Context, tx *sql.Tx, runID string, to run.Status) error {
	var id string
	var st run.OpStatus
	err := s.queryRow(ctx, tx, qOpUnsettled, runID, run.OpPending, run.OpNeedsHuman).Scan(&id, &st)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("sqlite: commit to %q: operations: %w", runID, err)
	}
	return fmt.Errorf("sqlite: commit to %q: %w: operation %s is %s, so the run cannot end %s", runID, store.ErrUnsettled, id, st, to)
}
