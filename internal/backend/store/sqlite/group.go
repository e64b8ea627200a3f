package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit. Every write of this Store is a request in one queue, and
// one writer at a time — the leader — runs all the requests waiting at
// that moment in one IMMEDIATE transaction — each in a savepoint of its
// own, so one request's error undoes only its writes — and commits them
// together: one fsync for the batch. A request's caller returns only after
// that commit, so a write is as durable when its method returns as it was
// with a transaction each. Requests that arrive while a batch commits wait
// for the next one: the batching adds no delay when writes come one at a
// time, and amortises the fsync when many runs step at once.
//
// The leader is the caller that found no batch running: it runs the batch
// on its own goroutine, so a write that meets no other costs no hand-off
// to another goroutine and back (each a wake-up, on the path of every
// step). A leader runs one batch, its own request in it; when others
// queued meanwhile, a goroutine takes over as leader until the queue is
// empty, so no caller's return waits for other callers' batches.

// defaultMaxBatch bounds the requests of one transaction, so that a burst
// never makes one transaction (and the wait of its first request) unbounded.
const defaultMaxBatch = 256

// ErrClosed is returned by a write made after Close.
var ErrClosed = errors.New("sqlite: store closed")

type writeReq struct {
	ctx     context.Context
	fn      func(tx *sql.Tx) error
	done    chan error
	touched []string // the runs whose events fn appended, once it succeeded
}

// committer is the Store's write path: the queue of write requests, and
// who runs them (at most one leader at a time owns the write connection's
// transactions).
type committer struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when leading turns false
	closed  bool
	leading bool
	queue   []*writeReq
	max     int         // requests per transaction
	batch   []*writeReq // the leader's, reused

	txs, writes atomic.Int64
	// busy and commitNS are nanoseconds spent running batches, and of
	// those, in COMMIT (the WAL write and its fsync).
	busy, commitNS atomic.Int64
}

// WriteStats counts this Store's write transactions. Each committed
// transaction is one fsync of the WAL (synchronous=FULL); Writes / Transactions
// is how many writes shared each.
type WriteStats struct {
	Transactions int64 // committed (or attempted) write transactions
	Writes       int64 // write requests: a Commit, CreateRun, AcquireLease...
	// Busy is the time spent running batches; Committing is the part of
	// it spent in COMMIT (writing the WAL and its fsync). Busy close to
	// the wall time means the single writer is the bottleneck.
	Busy, Committing time.Duration
}

// WriteStats reports the counters since Open.
func (s *Store) WriteStats() WriteStats {
	return WriteStats{Transactions: s.gc.txs.Load(), Writes: s.gc.writes.Load(),
		Busy: time.Duration(s.gc.busy.Load()), Committing: time.Duration(s.gc.commitNS.Load())}
}

func (s *Store) startCommitter(max int) {
	if max <= 0 {
		max = defaultMaxBatch
	}
	s.gc = &committer{max: max, batch: make([]*writeReq, 0, max)}
	s.gc.idle.L = &s.gc.mu
}

// stopCommitter refuses new writes and waits until the queued ones are
// committed.
func (s *Store) stopCommitter() {
	if s.gc == nil {
		return
	}
	g := s.gc
	g.mu.Lock()
	g.closed = true
	for g.leading {
		g.idle.Wait()
	}
	g.mu.Unlock()
}

// write runs fn in the next group transaction, in a savepoint of its own,
// and returns once that transaction committed (nil) or fn's error, which
// rolls back fn's writes only. fn must not call other methods of the Store
// that write (they would wait for the transaction fn is part of).
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	g := s.gc
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.queue = append(g.queue, r)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if lead {
		s.lead(false)
	}
	// Wait for the outcome even when ctx ends: fn may be running, and the
	// caller must not take a commit for a failure.
	return <-r.done
}

// WriteTx runs fn in the Store's group transaction, as the Store's own
// writes do: for components keeping their own tables in the same file
// (the local Step Functions executor), so that their writes share the
// fsync too. The same rules as for a Store write apply: fn's error undoes
// fn's writes only; nil means committed and durable.
func (s *Store) WriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.write(ctx, fn)
}

// tryLead makes the caller the leader if no batch runs, for a read on w
// between batches (its page cache is current: every write was its own);
// false when a batch runs or the Store is closed. A true must be followed
// by unlead.
func (s *Store) tryLead() bool {
	g := s.gc
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leading || g.closed {
		return false
	}
	g.leading = true
	return true
}

// unlead gives up the lead tryLead took: to a goroutine of its own when
// writes queued meanwhile.
func (s *Store) unlead() {
	s.gc.mu.Lock()
	more := s.gc.stepDownLocked()
	s.gc.mu.Unlock()
	if more {
		go s.lead(true)
	}
}

// stepDownLocked ends the lead when the queue is empty; true means writes
// wait and the leader must go on (or hand on). g.mu is held.
func (g *committer) stepDownLocked() bool {
	if len(g.queue) > 0 {
		return true
	}
	g.leading = false
	g.idle.Broadcast()
	return false
}

// lead runs batches of the queue while this goroutine is the leader: one
// for a caller (whose own request is in it); if more queued meanwhile, it
// hands the lead to a goroutine of its own (background), which runs
// batches until the queue is empty.
func (s *Store) lead(background bool) {
	g := s.gc
	for ran := false; ; ran = true {
		g.mu.Lock()
		if !g.stepDownLocked() {
			g.mu.Unlock()
			return
		}
		if ran && !background {
			g.mu.Unlock()
			go s.lead(true)
			return
		}
		n := min(len(g.queue), g.max)
		batch := append(g.batch[:0], g.queue[:n]...)
		rest := copy(g.queue, g.queue[n:])
		clear(g.queue[rest:])
		g.queue = g.queue[:rest]
		g.mu.Unlock()

		start := time.Now()
		s.runBatch(batch)
		s.prepareMissed() // between transactions: w's connection is free
		g.busy.Add(int64(time.Since(start)))
		clear(batch)
		g.batch = batch[:0]
	}
}

// committerCtx is the context a statement of the group transaction runs
// under: the caller's values without its cancellation. The driver turns a
// cancellation during a statement into sqlite3_interrupt, which rolls back
// the whole transaction — every other caller's writes of the batch with
// it — and watches each cancellable statement with a goroutine of its own,
// a wake-up on the single writer's path. A caller who gave up is already
// skipped before its savepoint starts.
func committerCtx(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// runBatch runs the requests in one transaction and answers each.
func (s *Store) runBatch(batch []*writeReq) {
	s.gc.txs.Add(1)
	s.gc.writes.Add(int64(len(batch)))
	results := make([]error, len(batch))
	answer := func() {
		for i, r := range batch {
			r.done <- results[i]
		}
	}
	// The transaction's own context is the committer's: one caller giving
	// up must not roll back the others' writes.
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		for i := range results {
			results[i] = fmt.Errorf("sqlite: begin: %w", err)
		}
		answer()
		return
	}
	single := len(batch) == 1
	ok := 0
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if single {
			// Alone in the transaction: its rollback is the transaction's.
			s.takeTouched()
			results[i] = call(tx, r)
			r.touched = s.takeTouched()
		} else {
			var broken bool
			results[i], broken = s.runSavepoint(tx, r)
			if broken {
				// The transaction cannot go on: no request of it commits.
				_ = tx.Rollback()
				for j := range results {
					if j > i || results[j] == nil {
						results[j] = fmt.Errorf("sqlite: write: the group transaction failed: %w", results[i])
					}
				}
				answer()
				return
			}
		}
		if results[i] == nil {
			ok++
		}
	}
	if ok == 0 {
		_ = tx.Rollback()
		answer()
		return
	}
	cstart := time.Now()
	err = tx.Commit()
	s.gc.commitNS.Add(int64(time.Since(cstart)))
	if err != nil {
		for i := range results {
			if results[i] == nil {
				results[i] = fmt.Errorf("sqlite: commit: %w", err)
			}
		}
		answer()
		return
	}
	if fn, okFn := s.onEvents.Load().(func(string)); okFn && fn != nil {
		for i, r := range batch {
			if results[i] != nil {
				continue
			}
			for _, id := range r.touched {
				fn(id)
			}
		}
	}
	answer()
}

// The savepoint statements, prepared once with the hot queries: parsing
// them for every write was a tenth of the committer's time.
const (
	qSavepoint  = `SAVEPOINT w`
	qRollbackTo = `ROLLBACK TO w`
	qRelease    = `RELEASE w`
)

// call runs r's fn, turning a panic into its error: the leader serves
// every writer, and one bug must not leave the others waiting forever.
// A panic also stops the batch (errPanic): what the transaction holds is
// then unknown.
func call(tx *sql.Tx, r *writeReq) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlite: write panicked: %v: %w", p, errPanic)
		}
	}()
	return r.fn(tx)
}

var errPanic = errors.New("the group transaction was abandoned")

// runSavepoint runs r in a savepoint of tx; broken reports that tx cannot
// be used any more (the savepoint could not be set, undone or released).
func (s *Store) runSavepoint(tx *sql.Tx, r *writeReq) (err error, broken bool) {
	bg := context.Background()
	if _, err := s.exec(bg, tx, qSavepoint); err != nil {
		return err, true
	}
	s.takeTouched()
	err = call(tx, r)
	r.touched = s.takeTouched()
	if errors.Is(err, errPanic) {
		return err, true
	}
	if err != nil {
		if _, rerr := s.exec(bg, tx, qRollbackTo); rerr != nil {
			return errors.Join(err, rerr), true
		}
	}
	if _, rerr := s.exec(bg, tx, qRelease); rerr != nil {
		return errors.Join(err, rerr), true
	}
	return err, false
}
