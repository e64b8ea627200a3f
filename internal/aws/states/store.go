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
