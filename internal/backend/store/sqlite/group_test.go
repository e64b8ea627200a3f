package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Many runs committing at once: every commit lands, in order per run, and
// is there after the file is closed and opened again.
func TestGroupCommitConcurrentRunsDurable(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keel.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const runs, steps = 48, 20
	tokens := make([]int64, runs)
	for i := range runs {
		id := fmt.Sprintf("run_%02d", i)
		if _, _, err := s.CreateRun(ctx, run.Run{ID: id, SessionID: "s", Owner: "alice", Agent: "a", Request: "go"}); err != nil {
			t.Fatal(err)
		}
		r, err := s.AcquireLease(ctx, id, "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = r.Lease.Token
	}
	before := s.WriteStats()
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("run_%02d", i)
			for j := range steps {
				state, _ := json.Marshal(map[string]any{"messages": []string{id, fmt.Sprint(j)}})
				if _, err := s.Commit(ctx, store.Commit{RunID: id, Token: tokens[i], Run: &store.RunPatch{StepsDelta: 1},
					Events:     []run.Event{{Type: run.EventModelCallCompleted, Data: json.RawMessage(`{"step":` + fmt.Sprint(j) + `}`)}},
					Checkpoint: &run.Checkpoint{ID: fmt.Sprintf("cp_%s_%03d", id, j), State: state}}); err != nil {
					errs <- fmt.Errorf("%s step %d: %w", id, j, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := s.WriteStats()
	txs, writes := st.Transactions-before.Transactions, st.Writes-before.Writes
	if writes != runs*steps || txs < 1 || txs > writes {
		t.Fatalf("stats: %d transactions for %d writes, want %d writes", txs, writes, runs*steps)
	}
	t.Logf("%d commits in %d transactions (%.2f fsyncs per commit)", writes, txs, float64(txs)/float64(writes))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range runs {
		id := fmt.Sprintf("run_%02d", i)
		r, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.StepCount != steps || r.CheckpointID != fmt.Sprintf("cp_%s_%03d", id, steps-1) {
			t.Fatalf("%s: %d steps, checkpoint %s", id, r.StepCount, r.CheckpointID)
		}
		evs, err := s.ReadEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		for _, e := range evs {
			if e.Type == run.EventModelCallCompleted {
				if want := fmt.Sprintf(`{"step":%d}`, got); string(e.Data) != want {
					t.Fatalf("%s: event %d is %s, want %s", id, e.Seq, e.Data, want)
				}
				got++
			}
		}
		if got != steps {
			t.Fatalf("%s: %d step events, want %d", id, got, steps)
		}
		if probs := run.VerifyChain(id, evs, r.LastSeq, r.LastHash); len(probs) > 0 {
			t.Fatalf("%s: chain: %v", id, probs)
		}
	}
}

// Writes queued while a transaction runs share the next one; a failing
// write in it is undone alone, and the others commit.
func TestGroupCommitBatchesAndIsolatesFailures(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "keel.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE t_group (k INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(k int) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO t_group VALUES (?)`, k)
			return err
		}
	}
	before := s.WriteStats()
	release, started := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.write(ctx, func(tx *sql.Tx) error {
			close(started)
			<-release // holds the committer until the others are queued
			return insert(0)(tx)
		})
	}()
	<-started
	const n = 40
	boom := errors.New("boom")
	results := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func() {
			fn := insert(i)
			if i == 7 {
				fn = func(tx *sql.Tx) error {
					if err := insert(i)(tx); err != nil {
						return err
					}
					return boom // after a write: the savepoint must undo it
				}
			}
			results <- s.write(ctx, fn)
		}()
	}
	for s.queued() < n {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	var failed int
	for range n {
		if err := <-results; errors.Is(err, boom) {
			failed++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if failed != 1 {
		t.Fatalf("%d writes failed, want 1", failed)
	}
	var rows, seven int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN k = 7 THEN 1 END) FROM t_group`).Scan(&rows, &seven); err != nil {
		t.Fatal(err)
	}
	if rows != n || seven != 0 {
		t.Fatalf("%d rows (%d of the failed write), want %d and 0", rows, seven, n)
	}
	st := s.WriteStats()
	if txs, writes := st.Transactions-before.Transactions, st.Writes-before.Writes; txs != 2 || writes != n+1 {
		// The held write's transaction, then one for all that queued.
		t.Fatalf("%d transactions for %d writes, want 2 for %d", txs, writes, n+1)
	}
}

// Close lets queued writes finish; a write after Close is refused.
func TestGroupCommitClose(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "keel.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateRun(ctx, run.Run{ID: "run_1", SessionID: "s", Owner: "alice", Agent: "a", Request: "go"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateRun(ctx, run.Run{ID: "run_2", SessionID: "s", Owner: "alice", Agent: "a", Request: "go"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v, want ErrClosed", err)
	}
}

// A write that panics fails with an error, and the Store keeps serving.
func TestGroupCommitPanicIsAnError(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "keel.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.write(ctx, func(tx *sql.Tx) error { panic("bug") })
	if err == nil || !errors.Is(err, errPanic) {
		t.Fatalf("panicking write: %v", err)
	}
	if _, _, err := s.CreateRun(ctx, run.Run{ID: "run_1", SessionID: "s", Owner: "alice", Agent: "a", Request: "go"}); err != nil {
		t.Fatalf("write after the panic: %v", err)
	}
}

// The caller that leads a batch returns once that batch committed, though
// writes queued meanwhile still wait for theirs (a goroutine leads on), and
// RunSignals answers while a batch holds the write connection.
func TestGroupCommitLeaderReturnsAfterItsBatch(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "keel.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.CreateRun(ctx, run.Run{ID: "run_1", SessionID: "s", Owner: "alice", Agent: "a", Request: "go"}); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.write(ctx, func(*sql.Tx) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	// The write connection is in a batch: the signals come from the pool.
	if sig, err := s.RunSignals(ctx, "run_1"); err != nil || sig.Status != run.StatusCreated {
		t.Fatalf("RunSignals during a batch: %+v, %v", sig, err)
	}
	secondStarted, secondRelease := make(chan struct{}), make(chan struct{})
	second := make(chan error, 1)
	go func() {
		second <- s.write(ctx, func(*sql.Tx) error {
			close(secondStarted)
			<-secondRelease
			return nil
		})
	}()
	for s.queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	// The first caller's batch is done: it returns while the second's
	// batch, which it does not run, is held.
	select {
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the leading caller waited for a batch queued after its own")
	}
	<-secondStarted
	close(secondRelease)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if sig, err := s.RunSignals(ctx, "run_1"); err != nil || sig.Status != run.StatusCreated {
		t.Fatalf("RunSignals between batches: %+v, %v", sig, err)
	}
}

// queued is the number of write requests waiting for a batch.
func (s *Store) queued() int {
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	return len(s.gc.queue)
}
