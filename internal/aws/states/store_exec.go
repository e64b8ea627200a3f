// Executions in the store: their rows, the commit of a step's events, and their end.

package states

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// execRecord is one row of sfn_executions.
type execRecord struct {
	ARN, MachineARN, Name, DefHash string
	Input                          string
	Status                         string
	Start, Stop                    time.Time
	Output, Error, Cause           sql.NullString
	Cursor                         []byte
	EventCount                     int64
}

// Execution statuses, as DescribeExecution reports them.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusAborted   = "ABORTED"
)

// createExecution inserts a new execution with its first events
// (ExecutionStarted, the first StateEntered), or returns the existing
// execution of that name (created=false).
func (s *Store) createExecution(ctx context.Context, rec execRecord, events []newEvent) (execRecord, bool, error) {
	var out execRecord
	created := false
	if err := encodeEvents(events); err != nil {
		return out, false, err
	}
	err := s.tx(ctx, func(c conn) error {
		existing, err := scanExec(c.QueryRowContext(ctx, execSelect+` WHERE machine_arn = ? AND name = ?`, rec.MachineARN, rec.Name))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, errNoRow) {
			return err
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO sfn_executions(arn, machine_arn, name, def_hash, input, status, start_ms, cursor, event_count)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, rec.ARN, rec.MachineARN, rec.Name, rec.DefHash, rec.Input, StatusRunning, rec.Start.UnixMilli(), string(rec.Cursor), len(events)); err != nil {
			return err
		}
		if err := s.insertEvents(ctx, c, rec.ARN, 1, events); err != nil {
			return err
		}
		out, created = rec, true
		out.Status, out.EventCount = StatusRunning, int64(len(events))
		return nil
	})
	return out, created, err
}

const execSelect = `SELECT arn, machine_arn, name, def_hash, input, status, start_ms, stop_ms, output, error, cause, cursor, event_count FROM sfn_executions`

type rowScanner interface{ Scan(...any) error }

func scanExec(r rowScanner) (execRecord, error) {
	var rec execRecord
	var start int64
	var stop sql.NullInt64
	var cur string
	err := r.Scan(&rec.ARN, &rec.MachineARN, &rec.Name, &rec.DefHash, &rec.Input, &rec.Status, &start, &stop, &rec.Output, &rec.Error, &rec.Cause, &cur, &rec.EventCount)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, errNoRow
	}
	if err != nil {
		return rec, err
	}
	rec.Start = time.UnixMilli(start).UTC()
	if stop.Valid {
		rec.Stop = time.UnixMilli(stop.Int64).UTC()
	}
	rec.Cursor = []byte(cur)
	return rec, nil
}

func (s *Store) execution(ctx context.Context, arn string) (execRecord, error) {
	return scanExec(s.rd.QueryRowContext(ctx, qExecByARN, arn))
}

func (s *Store) runningExecutions(ctx context.Context) ([]execRecord, error) {
	rows, err := s.rd.QueryContext(ctx, qRunning, StatusRunning)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []execRecord
	for rows.Next() {
		rec, err := scanExec(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// finalState closes an execution.
type finalState struct {
	Status        string
	Output        *string
	Error, Cause  string
	hasErrorCause bool
}

// tokenRow is a task token waiting for SendTask*.
type tokenRow struct {
	Token, ExecutionARN, State string
	Status                     string // waiting, succeeded, failed, timed_out, closed
	Output, Error, Cause       sql.NullString
	Heartbeat                  time.Time
}

// Token statuses.
const (
	tokWaiting   = "waiting"
	tokSucceeded = "succeeded"
	tokFailed    = "failed"
	tokTimedOut  = "timed_out"
	tokClosed    = "closed"
)

// commitReq is one transition of an execution, written in one transaction.
type commitReq struct {
	Cursor   []byte
	Events   []newEvent
	Final    *finalState
	NewToken *tokenRow
}

// commit appends events and moves the cursor if the execution is still
// running (errNotRunning otherwise). If an event would be number
// HistoryLimit and is not the closing event, it writes ExecutionFailed
// with States.Runtime in its place and returns errHistoryLimit.
func (s *Store) commit(ctx context.Context, arn string, now time.Time, req commitReq) error {
	if err := encodeEvents(req.Events); err != nil {
		return err
	}
	limited := false
	err := s.tx(ctx, func(c conn) error {
		var status string
		var count int64
		err := c.QueryRowContext(ctx, qExecStatus, arn).Scan(&status, &count)
		if err != nil {
			return err
		}
		if status != StatusRunning {
			return errNotRunning
		}
		// Events up to the limit are written as they are; the one that
		// would be number HistoryLimit is replaced by the failure, unless it
		// is the closing event itself.
		evs := req.Events
		cut := -1
		for i := range evs {
			if id := count + int64(i) + 1; id >= HistoryLimit && !(req.Final != nil && i == len(evs)-1) {
				cut = i
				break
			}
		}
		if cut >= 0 {
			if err := s.insertEvents(ctx, c, arn, count+1, evs[:cut]); err != nil {
				return err
			}
			count += int64(cut) + 1
			failed := newEvent{Type: "ExecutionFailed", TS: now, Details: map[string]any{
				"executionFailedEventDetails": map[string]any{"error": ErrRuntime, "cause": historyLimitCause}}}
			if err := s.insertEvent(ctx, c, arn, count, failed); err != nil {
				return err
			}
			limited = true // committed: the failure is the execution's end
			return closeExecution(ctx, c, arn, now, count, &finalState{Status: StatusFailed, Error: ErrRuntime, Cause: historyLimitCause, hasErrorCause: true})
		}
		if err := s.insertEvents(ctx, c, arn, count+1, evs); err != nil {
			return err
		}
		count += int64(len(evs))
		if t := req.NewToken; t != nil {
			if _, err := c.ExecContext(ctx, qTokenInsert,
				t.Token, arn, t.State, tokWaiting, t.Heartbeat.UnixMilli()); err != nil {
				return err
			}
		}
		if req.Final != nil {
			return closeExecution(ctx, c, arn, now, count, req.Final)
		}
		_, err = c.ExecContext(ctx, qCursorUpdate, string(req.Cursor), count, arn)
		return err
	})
	if err == nil && limited {
		return errHistoryLimit
	}
	return err
}

func closeExecution(ctx context.Context, c conn, arn string, now time.Time, count int64, f *finalState) error {
	var errV, causeV any
	if f.hasErrorCause {
		errV, causeV = f.Error, f.Cause
	}
	var out any
	if f.Output != nil {
		out = *f.Output
	}
	if _, err := c.ExecContext(ctx, qExecClose,
		f.Status, now.UnixMilli(), out, errV, causeV, count, arn); err != nil {
		return err
	}
	// Tokens of a closed execution can no longer complete anything.
	_, err := c.ExecContext(ctx, qTokensClose, tokClosed, arn, tokWaiting)
	return err
}

// stop aborts a running execution. It reports whether it was running.
func (s *Store) stop(ctx context.Context, arn string, now time.Time, errName, cause string) (bool, error) {
	stopped := false
	err := s.tx(ctx, func(c conn) error {
		var status string
		var count int64
		err := c.QueryRowContext(ctx, qExecStatus, arn).Scan(&status, &count)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoRow
		}
		if err != nil {
			return err
		}
		if status != StatusRunning {
			return nil
		}
		count++
		details := map[string]any{}
		if errName != "" {
			details["error"] = errName
		}
		if cause != "" {
			details["cause"] = cause
		}
		if err := s.insertEvent(ctx, c, arn, count, newEvent{Type: "ExecutionAborted", TS: now, Details: map[string]any{"executionAbortedEventDetails": details}}); err != nil {
			return err
		}
		stopped = true
		return closeExecution(ctx, c, arn, now, count, &finalState{Status: StatusAborted, Error: errName, Cause: cause, hasErrorCause: errName != "" || cause != ""})
	})
	return stopped, err
}
