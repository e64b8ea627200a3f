package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelrun/keel/internal/kernel/store"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

var _ store.Store = (*Store)(nil)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Clock stamps records and decides lease expiry; default time.Now.
	Clock func() time.Time
	// Logger receives migration and maintenance messages; default discards.
	Logger *slog.Logger
	// BusyTimeout is how long a write waits for another process holding the
	// file's write lock before failing; default 10s.
	BusyTimeout time.Duration
	// MaxBatch bounds the writes that share one transaction and fsync
	// (group commit); default 256. 1 gives each write its own, as before
	// group commit: for measuring the difference.
	MaxBatch int
	// PageSize is the page size of a file Open creates (a power of two
	// from 512 to 65536); default 4096 (pagesize.go says when a smaller
	// one pays). An existing file keeps its own.
	PageSize int
}

// Store is the SQLite implementation of store.Store. It is safe for
// concurrent use by any number of goroutines, and any number of processes may
// open the same file.
type Store struct {
	// w is the write handle: one connection whose transactions begin with
	// BEGIN IMMEDIATE. One connection queues writers of this process in Go
	// instead of in SQLite's sleeping busy handler, and IMMEDIATE takes the
	// write lock up front so two processes never deadlock upgrading a read
	// lock to a write lock.
	w *sql.DB
	// r is the read handle: many connections, each statement a WAL snapshot.
	r     *sql.DB
	clock func() time.Time
	log   *slog.Logger

	// stmts caches the hot-path statements prepared on w: parsing SQL was
	// half of a step's CPU time before.
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	// missed are write queries run unprepared, for the committer to
	// prepare between transactions (stmtcache.go).
	missed map[string]struct{}
	// rq is r with each read query prepared once.
	rq *readCache
	// signals is RunSignals' query prepared on r, and wSignals on w: a
	// Step reads it once an iteration.
	signals, wSignals *sql.Stmt

	// onEvents (a func(runID string)) is called after a commit that
	// appended events; touched collects the runs of the write request in
	// flight (there is one at a time: the leader runs them in turn).
	onEvents atomic.Value
	touchMu  sync.Mutex
	touched  []string

	gc *committer // every write goes through it (group.go)

	types eventTypes // the event_types table, read once in Open
	pc    *codec     // packs and unpacks payloads (payload.go)
}

// OnEvents sets fn to be called, after each transaction that appended
// events to a run commits, with the run's id: the signal live event
// streams wait on. fn must not block; it sees only this Store's own
// commits, not another process's. Call it before the store is shared.
func (s *Store) OnEvents(fn func(runID string)) { s.onEvents.Store(fn) }

// touch records that the transaction in flight appended events to runID.
func (s *Store) touch(runID string) {
	s.touchMu.Lock()
	if n := len(s.touched); n == 0 || s.touched[n-1] != runID {
		s.touched = append(s.touched, runID)
	}
	s.touchMu.Unlock()
}

func (s *Store) takeTouched() []string {
	s.touchMu.Lock()
	defer s.touchMu.Unlock()
	t := s.touched
	s.touched = nil
	return t
}

// Open opens (creating if needed) the database file at path, applies the
// pending migrations, and returns the Store. The caller must Close it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: open: %w: empty path", store.ErrInvalid)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	busy := fmt.Sprint(opts.BusyTimeout.Milliseconds())
	if err := createOwnerOnly(path); err != nil {
		return nil, err
	}
	if err := initFile(ctx, path, opts.PageSize); err != nil {
		return nil, err
	}
	w, err := openWriter(path, busy)
	if err != nil {
		return nil, err
	}
	r, err := openReader(path, busy)
	if err != nil {
		_ = w.Close()
		return nil, err
	}

	s := &Store{w: w, r: r, clock: opts.Clock, log: opts.Logger, stmts: map[string]*sql.Stmt{}, missed: map[string]struct{}{},
		pc: newCodec()}
	s.rq = newReadCache(r)
	// The writer must exist (and have switched the file to WAL) before a
	// reader touches it.
	if err := w.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := narrowModes(path); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.startCommitter(opts.MaxBatch)
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.types, err = loadEventTypes(ctx, s.w); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// withDefaults fills in the documented defaults of unset options and
// refuses a page size SQLite cannot use.
func (opts Options) withDefaults() (Options, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	if opts.PageSize == 0 {
		opts.PageSize = defaultPageSize
	}
	if opts.PageSize < 512 || opts.PageSize > 65536 || opts.PageSize&(opts.PageSize-1) != 0 {
		return opts, fmt.Errorf("sqlite: open: %w: page size %d is not a power of two from 512 to 65536", store.ErrInvalid, opts.PageSize)
	}
	return opts, nil
}

// openWriter opens the write handle: one connection kept open, whose
// transactions begin IMMEDIATE, busy milliseconds of busy timeout.
func openWriter(path, busy string) (*sql.DB, error) {
	wq := url.Values{}
	wq.Set("_txlock", "immediate")
	wq.Add("_pragma", "busy_timeout("+busy+")")
	wq.Add("_pragma", "journal_mode(WAL)")
	wq.Add("_pragma", "synchronous(FULL)")
	// A page cache that holds the hot pages of a busy store (64 MiB): with
	// the default 2 MiB the one writer re-read index pages and spilled dirty
	// pages mid-transaction, each a syscall on the group commit's path.
	wq.Add("_pragma", "cache_size(-65536)")
	// Each write of a group transaction runs in a savepoint, whose
	// sub-journal keeps the first copy of every page it changes; in a file
	// (the default) that was most of the writer's pwrite calls. In memory
	// it lives only until the savepoint is released, long before the
	// transaction's COMMIT: durability is the WAL's, not this journal's.
	wq.Add("_pragma", "temp_store(MEMORY)")
	wq.Add("_pragma", "foreign_keys(ON)")
	w, err := sql.Open("sqlite", "file:"+path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	return w, nil
}

// openReader opens the read-only handle, a pool of four connections.
func openReader(path, busy string) (*sql.DB, error) {
	rq := url.Values{}
	rq.Add("_pragma", "busy_timeout("+busy+")")
	rq.Add("_pragma", "foreign_keys(ON)")
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", "file:"+path+"?"+rq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	return r, nil
}

// DB returns the write handle, for tests and for components that keep their
// own tables in the same file (the local Step Functions executor's sfn_
// tables). Its transactions begin IMMEDIATE. It has a single connection
// shared with the Store's writes: never call a Store method while holding a
// transaction or an open *sql.Rows on it. Writes through it do not share
// the group commit; [Store.WriteTx] does.
func (s *Store) DB() *sql.DB { return s.w }

// Close closes both handles. Everything committed is already durable.
func (s *Store) Close() error {
	s.stopCommitter() // the writes queued before Close still commit
	s.mu.Lock()
	var errs []error
	for _, st := range []*sql.Stmt{s.signals, s.wSignals} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	s.signals, s.wSignals = nil, nil
	for q, st := range s.stmts {
		errs = append(errs, st.Close())
		delete(s.stmts, q)
	}
	s.mu.Unlock()
	errs = append(errs, s.rq.close()...)
	return errors.Join(append(errs, s.r.Close(), s.w.Close())...)
}

// hotQueries are prepared once per Store: a plain step's Commit and
// AppendEvents run only these.
var hotQueries = []string{qSavepoint, qRollbackTo, qRelease, qCommitRun, qOpHash, qOpInsert, qOpStatus, qOpUpdate, qPlanUpsert,
	qCheckpointInsert, qCheckpointAtRow, qCheckpointInIndex, qCommitUpdateRun, qCommitUpdateRunSameStatus, qLastSeq, qSetLastSeq}

// prepare prepares the hot-path statements on the write handle. It runs in
// Open, before any transaction holds w's single connection.
func (s *Store) prepare(ctx context.Context) error {
	for _, q := range append(hotQueries, eventInserts...) {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
		s.stmts[q] = st
	}
	var err error
	if s.signals, err = s.r.PrepareContext(ctx, qSignals); err != nil {
		return fmt.Errorf("sqlite: prepare: %w", err)
	}
	if s.wSignals, err = s.w.PrepareContext(ctx, qSignals); err != nil {
		return fmt.Errorf("sqlite: prepare: %w", err)
	}
	return nil
}

// exec runs query in tx, through its prepared statement when it is one of
// hotQueries.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	ctx = committerCtx(ctx)
	s.mu.Lock()
	st, ok := s.stmts[query]
	s.mu.Unlock()
	if !ok {
		s.mu.Lock()
		s.noteMissed(query)
		s.mu.Unlock()
		return tx.ExecContext(ctx, query, args...)
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// queryRow is exec's counterpart for a single-row query.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	ctx = committerCtx(ctx)
	s.mu.Lock()
	st, ok := s.stmts[query]
	s.mu.Unlock()
	if !ok {
		s.mu.Lock()
		s.noteMissed(query)
		s.mu.Unlock()
		return tx.QueryRowContext(ctx, query, args...)
	}
	return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}

// query is exec's counterpart for a query of many rows.
func (s *Store) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	ctx = committerCtx(ctx)
	s.mu.Lock()
	st, ok := s.stmts[query]
	if !ok {
		s.noteMissed(query)
	}
	s.mu.Unlock()
	if !ok {
		return tx.QueryContext(ctx, query, args...)
	}
	return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
}

func (s *Store) now() int64 { return s.clock().UnixNano() }

// ts converts a stored unix-nanosecond integer; 0 is the zero time.
func ts(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nanos converts a time for storage; the zero time is 0.
func nanos(t time.Time) int64 { return store.UnixNanos(t) }
