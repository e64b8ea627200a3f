package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness/harnesstest"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// env is one test's world: a store, artifacts and a clock with the moves
// of a harness test (harnesstest.Env), plus what only these tests add to
// it (children, pausingAgent).
type env struct{ *harnesstest.Env }

func newEnv(t testing.TB) *env { return &env{harnesstest.NewEnv(t)} }

// count is how many of evs are of type typ.
func count(evs []run.Event, typ run.EventType) int { return harnesstest.Count(evs, typ) }

// faultyStore fails chosen commits, as a crash between two writes would.
type faultyStore struct {
	*sqlite.Store
	mu   sync.Mutex
	fail func(c store.Commit) bool
	hits int
}

var errInjected = errors.New("injected: connection to the store lost")

func (f *faultyStore) Commit(ctx context.Context, c store.Commit) ([]int64, error) {
	f.mu.Lock()
	fail := f.fail != nil && f.fail(c)
	if fail {
		f.hits++
	}
	f.mu.Unlock()
	if fail {
		return nil, errInjected
	}
	return f.Store.Commit(ctx, c)
}

// CommitSignals hides the embedded store's: every commit goes through
// Commit above (the harness uses CommitSignals when a store has it).
func (f *faultyStore) CommitSignals(ctx context.Context, c store.Commit) ([]int64, store.RunSignals, error) {
	return commitThenSignals(ctx, f.Commit, f.Store, c)
}

// commitThenSignals is CommitSignals for a test wrapper whose Commit must
// see every commit: its commit, then a read of the signals.
func commitThenSignals(ctx context.Context, commit func(context.Context, store.Commit) ([]int64, error), s *sqlite.Store, c store.Commit) ([]int64, store.RunSignals, error) {
	seqs, err := commit(ctx, c)
	if err != nil {
		return nil, store.RunSignals{}, err
	}
	sig, err := s.RunSignals(ctx, c.RunID)
	return seqs, sig, err
}

// meteredStore records the bytes each commit carries.
type meteredStore struct {
	*sqlite.Store
	mu    sync.Mutex
	sizes []int
}

func (m *meteredStore) Commit(ctx context.Context, c store.Commit) ([]int64, error) {
	b, _ := json.Marshal(c)
	m.mu.Lock()
	m.sizes = append(m.sizes, len(b))
	m.mu.Unlock()
	return m.Store.Commit(ctx, c)
}

// CommitSignals: as faultyStore's.
func (m *meteredStore) CommitSignals(ctx context.Context, c store.Commit) ([]int64, store.RunSignals, error) {
	return commitThenSignals(ctx, m.Commit, m.Store, c)
}
