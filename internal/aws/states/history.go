package states

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
)

// newEvent is a history event before it gets its id.
type newEvent struct {
	Type    string
	TS      time.Time
	Details map[string]any // {"stateEnteredEventDetails": {...}}
	// details is Details encoded (encodeEvents): done before the write
	// transaction, so the JSON work stays off the single writer's path.
	details string
}

// encodeEvents encodes each event's Details into details.
func encodeEvents(evs []newEvent) error {
	for i := range evs {
		if evs[i].details != "" {
			continue
		}
		if evs[i].Details == nil {
			evs[i].details = "{}"
			continue
		}
		b, err := json.Marshal(evs[i].Details)
		if err != nil {
			return err
		}
		evs[i].details = string(b)
	}
	return nil
}

func (s *Store) insertEvent(ctx context.Context, c conn, arn string, id int64, ev newEvent) error {
	return s.insertEvents(ctx, c, arn, id, []newEvent{ev})
}

// The queries of an execution's transitions, prepared once on a shared
// handle (NewStoreWith): parsing them at each transition was a good part of
// the executor's time under load.
const (
	qExecStatus    = `SELECT status, event_count FROM sfn_executions WHERE arn = ?`
	qTokenInsert   = `INSERT INTO sfn_tokens(token, execution_arn, state, status, heartbeat_ms) VALUES (?, ?, ?, ?, ?)`
	qCursorUpdate  = `UPDATE sfn_executions SET cursor = ?, event_count = ? WHERE arn = ?`
	qExecClose     = `UPDATE sfn_executions SET status = ?, stop_ms = ?, output = ?, error = ?, cause = ?, event_count = ? WHERE arn = ?`
	qTokensClose   = `UPDATE sfn_tokens SET status = ? WHERE execution_arn = ? AND status = ?`
	qTokenStatus   = `SELECT status, execution_arn FROM sfn_tokens WHERE token = ?`
	qTokenComplete = `UPDATE sfn_tokens SET status = ?, output = ?, error = ?, cause = ? WHERE token = ?`
)

// maxPreparedHistory is the rows of the largest prepared history insert;
// a transition with more events is written in several.
const maxPreparedHistory = 8

func historyInsert(n int) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO sfn_history(execution_arn, id, type, ts_ms, details) VALUES `)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?)")
	}
	return q.String()
}

func preparedQueries() []string {
	qs := []string{qExecStatus, qTokenInsert, qCursorUpdate, qExecClose, qTokensClose, qTokenStatus, qTokenComplete}
	for n := 1; n <= maxPreparedHistory; n++ {
		qs = append(qs, historyInsert(n))
	}
	return qs
}

// stmtConn is a Writer's transaction running the prepared queries through
// their statements.
type stmtConn struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (c stmtConn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	// The Writer's transaction is shared with other writers: a caller's
	// cancellation must not interrupt it (the driver's interrupt rolls
	// back the whole transaction).
	ctx = context.WithoutCancel(ctx)
	if st, ok := c.stmts[q]; ok {
		return c.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return c.tx.ExecContext(ctx, q, args...)
}

func (c stmtConn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = context.WithoutCancel(ctx)
	if st, ok := c.stmts[q]; ok {
		return c.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return c.tx.QueryRowContext(ctx, q, args...)
}

// insertEvents writes events with ids first, first+1, ... in one statement.
func (s *Store) insertEvents(ctx context.Context, c conn, arn string, first int64, evs []newEvent) error {
	if len(evs) == 0 {
		return nil
	}
	if err := encodeEvents(evs); err != nil { // a no-op for the encoded
		return err
	}
	// In statements of at most maxPreparedHistory rows: each is prepared.
	for len(evs) > 0 {
		n := min(len(evs), maxPreparedHistory)
		args := make([]any, 0, 5*n)
		for i, ev := range evs[:n] {
			args = append(args, arn, first+int64(i), ev.Type, ev.TS.UnixMilli(), ev.details)
		}
		if _, err := c.ExecContext(ctx, historyInsert(n), args...); err != nil {
			return err
		}
		evs, first = evs[n:], first+int64(n)
	}
	return nil
}

// historyEvent is one stored history event.
type historyEvent struct {
	ID      int64
	Type    string
	TS      time.Time
	Details json.RawMessage
}

func (s *Store) history(ctx context.Context, arn string, offset, limit int, reverse bool) ([]historyEvent, error) {
	q := qHistoryAsc
	if reverse {
		q = qHistoryDesc
	}
	rows, err := s.rd.QueryContext(ctx, q, arn, limit, offset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []historyEvent
	for rows.Next() {
		var ev historyEvent
		var ts int64
		var d string
		if err := rows.Scan(&ev.ID, &ev.Type, &ts, &d); err != nil {
			return nil, err
		}
		ev.TS = time.UnixMilli(ts).UTC()
		ev.Details = json.RawMessage(d)
		out = append(out, ev)
	}
	return out, rows.Err()
}
