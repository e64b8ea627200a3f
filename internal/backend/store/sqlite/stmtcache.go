package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// Statements are prepared once and reused, on both handles: under load,
// parsing the same SQL again for every read and every write was 14 % of
// the dev server's CPU (bench/load, pprof). The queries are constants of
// this package, so the caches stay small; maxCached bounds them anyway,
// and a query past the bound simply runs unprepared.
const maxCached = 512

// readCache prepares each read query once on the read pool. database/sql
// prepares a Stmt again on each pooled connection it first runs on, and
// keeps it there.
type readCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newReadCache(db *sql.DB) *readCache {
	return &readCache{db: db, stmts: map[string]*sql.Stmt{}}
}

func (c *readCache) stmt(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts) >= maxCached {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		// The query itself will report the error when it runs.
		return nil
	}
	c.stmts[query] = st
	return st
}

func (c *readCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}

func (c *readCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}

func (c *readCache) close() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, q)
	}
	return errs
}

// The write handle has one connection, held by the group transaction
// while a batch runs, so a statement cannot be prepared on it from inside
// a write. A write query not yet prepared runs as it is and is noted in
// missed; the committer prepares the noted ones between two transactions
// (prepareMissed), and from then on they run prepared.

// noteMissed records query for prepareMissed; s.mu is held.
func (s *Store) noteMissed(query string) {
	if len(s.stmts)+len(s.missed) < maxCached {
		s.missed[query] = struct{}{}
	}
}

// prepareMissed prepares on w the write queries run unprepared since the
// last call. Only the committer calls it, with no transaction open.
func (s *Store) prepareMissed() {
	s.mu.Lock()
	missed := s.missed
	if len(missed) == 0 {
		s.mu.Unlock()
		return
	}
	s.missed = map[string]struct{}{}
	s.mu.Unlock()
	for q := range missed {
		st, err := s.w.PrepareContext(context.Background(), q)
		if err != nil {
			continue // it runs unprepared, and reports its own error there
		}
		s.mu.Lock()
		s.stmts[q] = st
		s.mu.Unlock()
	}
}

// txQuerier reads inside a write's transaction through prepared
// statements, for the helpers that take a querier (getRun, listRows, …).
type txQuerier struct {
	s  *Store
	tx *sql.Tx
}

func (q txQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return q.s.queryRow(ctx, q.tx, query, args...)
}

func (q txQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return q.s.query(ctx, q.tx, query, args...)
}

// ReadDB returns the read handle: a pool of read-only connections on the
// same file, each statement a WAL snapshot of what has committed. For the
// components keeping their own tables in the file (the local Step
// Functions executor), so that their reads never wait for the write
// connection, which the group transaction holds for a whole batch.
func (s *Store) ReadDB() *sql.DB { return s.r }
