package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

const runColumns = `id, session_id, owner, agent, COALESCE(client_key, ''), request, command, status,
	output, error, input_policy, max_steps, max_tool_calls, max_tokens, max_spend, deadline,
	tokens_used, tokens_reserved, spend_used, spend_reserved, tool_calls_used, tool_calls_reserved,
	lease_owner, lease_token, lease_expiry, cancel_requested, step_count, checkpoint_id, last_seq, last_hash,
	parent_run_id, fork_checkpoint_id, trace_parent, agent_version, created_at, updated_at,
	caller_run_id, caller_item_id, caller_op_id, depth`

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (run.Run, error) {
	var r run.Run
	var deadline, expiry, created, updated int64
	var cancel int
	err := sc.Scan(&r.ID, &r.SessionID, &r.Owner, &r.Agent, &r.ClientKey, &r.Request, &r.Command, &r.Status,
		&r.Output, &r.Error, &r.InputPolicy, &r.Limits.MaxSteps, &r.Limits.MaxToolCalls, &r.Limits.MaxTokens,
		&r.Limits.MaxSpendMicroUSD, &deadline,
		&r.Budget.TokensUsed, &r.Budget.TokensReserved, &r.Budget.SpendUsedMicroUSD, &r.Budget.SpendReservedMicroUSD,
		&r.Budget.ToolCallsUsed, &r.Budget.ToolCallsReserved,
		&r.Lease.Owner, &r.Lease.Token, &expiry, &cancel, &r.StepCount, &r.CheckpointID, &r.LastSeq, &r.LastHash,
		&r.ParentRunID, &r.ForkCheckpointID, &r.TraceParent, &r.AgentVersion, &created, &updated,
		&r.Caller.RunID, &r.Caller.PlanItemID, &r.Caller.OperationID, &r.Caller.Depth)
	if err != nil {
		return run.Run{}, err
	}
	r.Limits.Deadline = ts(deadline)
	r.Lease.Expiry = ts(expiry)
	r.CancelRequested = cancel != 0
	r.CreatedAt = ts(created)
	r.UpdatedAt = ts(updated)
	return r, nil
}

// querier is what both *sql.DB and *sql.Tx offer for reads.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func getRun(ctx context.Context, q querier, id string) (run.Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return run.Run{}, fmt.Errorf("sqlite: run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return run.Run{}, fmt.Errorf("sqlite: get run %q: %w", id, err)
	}
	return r, nil
}

// runExists returns nil, ErrNotFound or a database error; list methods call
// it only when their result is empty, to tell "none" from "no such run".
func runExists(ctx context.Context, q querier, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: run %q: %w", id, err)
	}
	return nil
}

// CreateRun implements store.Runs. Limits are stored as given (0 = no
// limit): applying run.DefaultLimits is the caller's policy. An empty input
// policy becomes queue.
func (s *Store) CreateRun(ctx context.Context, in run.Run) (run.Run, bool, error) {
	r, err := store.ValidateNewRun(in)
	if err != nil {
		return run.Run{}, false, err
	}
	var stored run.Run
	created := false
	err = s.write(ctx, func(tx *sql.Tx) error {
		if r.ClientKey != "" {
			existing, err := scanRun(s.queryRow(ctx, tx, `SELECT `+runColumns+` FROM runs WHERE owner = ? AND client_key = ?`, r.Owner, r.ClientKey))
			if err == nil {
				stored = existing
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: create run: %w", err)
			}
		}
		var one int
		switch err := s.queryRow(ctx, tx, `SELECT 1 FROM runs WHERE id = ?`, r.ID).Scan(&one); {
		case err == nil:
			return s.existingChild(ctx, tx, r, &stored)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("sqlite: create run: %w", err)
		}
		now := s.clock().UTC()
		r.CreatedAt, r.UpdatedAt = now, now
		var sessOwner string
		switch err := s.queryRow(ctx, tx, `SELECT owner FROM sessions WHERE id = ?`, r.SessionID).Scan(&sessOwner); {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := s.exec(ctx, tx, `INSERT INTO sessions(id, owner, created_at) VALUES (?, ?, ?)`,
				r.SessionID, r.Owner, now.UnixNano()); err != nil {
				return fmt.Errorf("sqlite: create session: %w", err)
			}
		case err != nil:
			return fmt.Errorf("sqlite: create run: %w", err)
		case sessOwner != r.Owner:
			return fmt.Errorf("sqlite: create run: %w: session %q belongs to another owner", store.ErrConflict, r.SessionID)
		}
		var clientKey any
		if r.ClientKey != "" {
			clientKey = r.ClientKey
		}
		first := []run.Event{{Type: run.EventRunCreated, Time: ts(now.UnixNano())}}
		head := run.Chain(r.ID, "", first)
		_, err := s.exec(ctx, tx, `INSERT INTO runs(id, session_id, owner, agent, client_key, request, command,
			status, input_policy, max_steps, max_tool_calls, max_tokens, max_spend, deadline, last_seq, last_hash,
			parent_run_id, fork_checkpoint_id, trace_parent, agent_version, created_at, updated_at,
			caller_run_id, caller_item_id, caller_op_id, depth, rk)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
			(SELECT COALESCE(MAX(rk), 0) + 1 FROM runs))`,
			r.ID, r.SessionID, r.Owner, r.Agent, clientKey, r.Request, r.Command,
			r.Status, r.InputPolicy, r.Limits.MaxSteps, r.Limits.MaxToolCalls, r.Limits.MaxTokens,
			r.Limits.MaxSpendMicroUSD, nanos(r.Limits.Deadline), r.LastSeq, head,
			r.ParentRunID, r.ForkCheckpointID, r.TraceParent, r.AgentVersion, now.UnixNano(), now.UnixNano(),
			r.Caller.RunID, r.Caller.PlanItemID, r.Caller.OperationID, r.Caller.Depth)
		if err != nil {
			return fmt.Errorf("sqlite: insert run: %w", err)
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO events(ek, type, time, hash) VALUES (((SELECT rk FROM runs WHERE id = ?) << 32) + 1, ?, ?, ?)`,
			r.ID, s.types.encode(run.EventRunCreated), now.UnixNano(), eventHash(first[0].Hash)); err != nil {
			return fmt.Errorf("sqlite: insert run_created: %w", err)
		}
		stored, err = getRun(ctx, txQuerier{s, tx}, r.ID)
		created = true
		return err
	})
	if err != nil {
		return run.Run{}, false, err
	}
	return stored, created, nil
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id string) (run.Run, error) {
	if err := store.ValidateID("run id", id); err != nil {
		return run.Run{}, err
	}
	return getRun(ctx, s.rq, id)
}

// ListRuns implements store.Runs. The page token encodes the position
// (created_at, id) of the last run returned.
func (s *Store) ListRuns(ctx context.Context, q store.ListRunsQuery) (store.RunPage, error) {
	limit, err := store.ValidateRunsQuery(q)
	if err != nil {
		return store.RunPage{}, err
	}
	var where []string
	var args []any
	if q.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, q.Owner)
	}
	if q.Status != "" {
		where, args = append(where, "status = ?"), append(args, q.Status)
	}
	if q.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, q.SessionID)
	}
	if q.Parent != "" {
		where, args = append(where, "caller_run_id = ?"), append(args, q.Parent)
	}
	if q.PageToken != "" {
		at, id, err := decodePageToken(q.PageToken)
		if err != nil {
			return store.RunPage{}, err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, at, at, id)
	}
	query := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.rq.QueryContext(ctx, query, args...)
	if err != nil {
		return store.RunPage{}, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	var page store.RunPage
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return store.RunPage{}, fmt.Errorf("sqlite: list runs: %w", err)
		}
		page.Runs = append(page.Runs, r)
	}
	if err := rows.Err(); err != nil {
		return store.RunPage{}, fmt.Errorf("sqlite: list runs: %w", err)
	}
	if len(page.Runs) > limit {
		page.Runs = page.Runs[:limit]
		last := page.Runs[limit-1]
		page.NextPageToken = encodePageToken(last.CreatedAt.UnixNano(), last.ID)
	}
	return page, nil
}

func encodePageToken(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at, 10) + ":" + id))
}

func decodePageToken(tok string) (int64, string, error) {
	malformed := fmt.Errorf("sqlite: %w: malformed page token", store.ErrInvalid)
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, "", malformed
	}
	at, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", malformed
	}
	return n, id, nil
}

// existingChild answers CreateRun for an id that exists: the same child
// run of the same sub-agent call is found (stored, created=false);
// anything else is a conflict.
func (s *Store) existingChild(ctx context.Context, tx *sql.Tx, r run.Run, stored *run.Run) error {
	if r.Caller == (run.Caller{}) {
		return fmt.Errorf("sqlite: create run: %w: run %q exists", store.ErrConflict, r.ID)
	}
	got, err := getRun(ctx, txQuerier{s, tx}, r.ID)
	if err != nil {
		return err
	}
	if got.Caller.RunID != r.Caller.RunID || got.Caller.OperationID != r.Caller.OperationID {
		return fmt.Errorf("sqlite: create run: %w: run %q exists for another caller", store.ErrConflict, r.ID)
	}
	*stored = got
	return nil
}
