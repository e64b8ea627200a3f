package states

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// HistoryLimit is Step Functions' limit on events in one execution's
// history. The event that would be number 25,000 is replaced by an
// ExecutionFailed event with States.Runtime, as AWS does.
const HistoryLimit = 25000

const historyLimitCause = "The execution reached the maximum number of history events (25000)."

var (
	errNotRunning   = errors.New("execution is not running")
	errHistoryLimit = errors.New("execution reached the history limit")
	errNoRow        = errors.New("not found")
)

// Store persists state machines, executions, their histories and task
// tokens in SQLite, in tables prefixed sfn_, so it can share the Keel
// database file. Every method is one transaction; writers take the write
// lock up front (BEGIN IMMEDIATE) so that concurrent writers queue on
// busy_timeout instead of failing on lock upgrade.
type Store struct {
	db    *sql.DB
	owned bool
	// w, when set, runs the write transactions: the run store's group
	// commit, so that a transition shares its fsync with the steps of
	// other runs (NewStoreWith).
	w     Writer
	stmts map[string]*sql.Stmt // prepared on db for w's transactions
	// rd runs the reads: on db, or on w's read pool when it has one.
	rd reader
}

// Writer runs fn in a write transaction that is committed and durable
// when it returns nil; fn's error undoes fn's writes. *sqlite.Store is one
// (its group commit).
type Writer interface {
	WriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error
}

// conn is what a write transaction's body uses: a *sql.Conn inside BEGIN
// IMMEDIATE, or a Writer's *sql.Tx.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// OpenStore opens (creating if needed) the SQLite database at path with WAL,
// synchronous=FULL and a busy timeout, and applies the sfn_ migrations.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("states: open %s: %w", path, err)
	}
	s, err := NewStore(ctx, db)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// NewStore uses an existing database handle (its owner sets the pragmas)
// and applies the sfn_ migrations. Close does not close a shared handle.
func NewStore(ctx context.Context, db *sql.DB) (*Store, error) {
	s := &Store{db: db, rd: reader{db: db}}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// NewStoreWith is NewStore whose writes run through w, which must write
// to db's file (the run store's group commit on the same database). When
// w also has a read pool on that file (a ReadDB() *sql.DB method, as
// *sqlite.Store has), the reads go there (reads.go).
func NewStoreWith(ctx context.Context, db *sql.DB, w Writer) (*Store, error) {
	s := &Store{db: db, w: w, stmts: map[string]*sql.Stmt{}, rd: reader{db: db}}
	if rp, ok := w.(readPool); ok && rp.ReadDB() != nil {
		s.rd.db = rp.ReadDB()
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if err := s.rd.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("states: prepare: %w", err)
	}
	for _, q := range preparedQueries() {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("states: prepare: %w", err)
		}
		s.stmts[q] = st
	}
	return s, nil
}

// Close closes the database if OpenStore opened it.
func (s *Store) Close() error {
	s.rd.close()
	for q, st := range s.stmts {
		_ = st.Close()
		delete(s.stmts, q)
	}
	if s.owned {
		return s.db.Close()
	}
	return nil
}

var migrations = []string{
	`CREATE TABLE sfn_definitions (
		hash TEXT PRIMARY KEY,
		definition TEXT NOT NULL
	);
	CREATE TABLE sfn_state_machines (
		arn TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		def_hash TEXT NOT NULL REFERENCES sfn_definitions(hash),
		updated_ms INTEGER NOT NULL
	);
	CREATE TABLE sfn_executions (
		arn TEXT PRIMARY KEY,
		machine_arn TEXT NOT NULL,
		name TEXT NOT NULL,
		def_hash TEXT NOT NULL REFERENCES sfn_definitions(hash),
		input TEXT NOT NULL,
		status TEXT NOT NULL,
		start_ms INTEGER NOT NULL,
		stop_ms INTEGER,
		output TEXT,
		error TEXT,
		cause TEXT,
		cursor TEXT NOT NULL,
		event_count INTEGER NOT NULL,
		UNIQUE (machine_arn, name)
	);
	CREATE INDEX sfn_executions_status ON sfn_executions(status);
	CREATE TABLE sfn_history (
		execution_arn TEXT NOT NULL,
		id INTEGER NOT NULL,
		type TEXT NOT NULL,
		ts_ms INTEGER NOT NULL,
		details TEXT NOT NULL,
		PRIMARY KEY (execution_arn, id)
	) WITHOUT ROWID;
	CREATE TABLE sfn_tokens (
		token TEXT PRIMARY KEY,
		execution_arn TEXT NOT NULL,
		state TEXT NOT NULL,
		status TEXT NOT NULL,
		output TEXT,
		error TEXT,
		cause TEXT,
		heartbeat_ms INTEGER NOT NULL
	);
	CREATE INDEX sfn_tokens_execution ON sfn_tokens(execution_arn, status);`,
}

func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(c conn) error {
		if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS sfn_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)`); err != nil {
			return err
		}
		var v int
		if err := c.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM sfn_migrations`).Scan(&v); err != nil {
			return err
		}
		for i := v; i < len(migrations); i++ {
			if _, err := c.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migration %d: %w", i+1, err)
			}
			if _, err := c.ExecContext(ctx, `INSERT INTO sfn_migrations(version, applied_ms) VALUES (?, ?)`, i+1, time.Now().UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
}

// tx runs fn in a BEGIN IMMEDIATE transaction on one connection. It does
// not depend on the DSN of a shared handle.
func (s *Store) tx(ctx context.Context, fn func(c conn) error) (err error) {
	if s.w != nil {
		return s.w.WriteTx(ctx, func(tx *sql.Tx) error { return fn(stmtConn{tx: tx, stmts: s.stmts}) })
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("states: db conn: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("states: begin: %w", err)
	}
	defer func() {
		if err != nil {
			// A fresh context: the rollback must run even when ctx is done.
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	if err = fn(c); err != nil {
		return err
	}
	if _, err = c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("states: commit: %w", err)
	}
	return nil
}

func (s *Store) putDefinition(ctx context.Context, arn, name, hash string, def []byte, now time.Time) error {
	return s.tx(ctx, func(c conn) error {
		if _, err := c.ExecContext(ctx, `INSERT INTO sfn_definitions(hash, definition) VALUES (?, ?) ON CONFLICT(hash) DO NOTHING`, hash, string(def)); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, `INSERT INTO sfn_state_machines(arn, name, def_hash, updated_ms) VALUES (?, ?, ?, ?)
			ON CONFLICT(arn) DO UPDATE SET def_hash = excluded.def_hash, updated_ms = excluded.updated_ms`, arn, name, hash, now.UnixMilli())
		return err
	})
}

func (s *Store) definition(ctx context.Context, hash string) ([]byte, error) {
	var def string
	err := s.rd.QueryRowContext(ctx, qDefinition, hash).Scan(&def)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoRow
	}
	return []byte(def), err
}

func (s *Store) machineHash(ctx context.Context, arn string) (string, error) {
	var h string
	err := s.rd.QueryRowContext(ctx, qMachineHash, arn).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", errNoRow
	}
	return h, err
}

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
