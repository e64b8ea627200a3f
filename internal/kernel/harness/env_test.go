package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	artfs "github.com/keelrun/keel/internal/kernel/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/proof/fixture"
	"github.com/keelrun/keel/internal/proof/fixture/fixturetest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	t      testing.TB
	ctx    context.Context
	clock  *clock
	store  *sqlite.Store
	arts   *artfs.Store
	pubDir string
	dir    string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	clk := newClock()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "keel.db"), sqlite.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artfs.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: context.Background(), clock: clk, store: st, arts: arts, pubDir: filepath.Join(dir, "published"), dir: dir}
}

// harness builds a harness over the env's store (or a wrapper of it).
func (e *env) harness(st harness.Store, agents harness.Agents, mod func(*harness.Options)) *harness.Harness {
	e.t.Helper()
	if st == nil {
		st = e.store
	}
	o := harness.Options{Store: st, Artifacts: e.arts, Agents: agents, Owner: "test-worker", Clock: e.clock.Now}
	if mod != nil {
		mod(&o)
	}
	h, err := harness.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) scripted(script string) model.Model {
	e.t.Helper()
	m, err := scripted.Parse([]byte(script))
	if err != nil {
		e.t.Fatal(err)
	}
	return model.Direct(m)
}

func (e *env) researchAgents(to fixture.Publisher) harness.AgentMap {
	e.t.Helper()
	if to == nil {
		to = fixture.DirPublisher{Dir: e.pubDir}
	}
	a, err := fixturetest.Agent(e.scripted(string(fixture.Script)), e.arts, to)
	if err != nil {
		e.t.Fatal(err)
	}
	return harness.AgentMap{fixture.AgentName: a}
}

func (e *env) agent(name string, script string, tools ...tool.Tool) harness.AgentMap {
	e.t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		e.t.Fatal(err)
	}
	return harness.AgentMap{name: {Name: name, Model: e.scripted(script), Tools: reg, MaxTokens: 100}}
}

func (e *env) createRun(agent, session string, mod func(*run.Run)) run.Run {
	e.t.Helper()
	r := run.Run{ID: run.NewID("run"), SessionID: session, Owner: "alice", Agent: agent, Request: "Write the research report.",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
	if mod != nil {
		mod(&r)
	}
	got, _, err := e.store.CreateRun(e.ctx, r)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// stepUntil steps the run until a decision other than continue/wait.
func (e *env) stepUntil(h *harness.Harness, runID string) harness.Decision {
	e.t.Helper()
	for i := 0; i < 100; i++ {
		d, err := h.Step(e.ctx, runID, time.Minute)
		if err != nil {
			e.t.Fatalf("step %d: %v", i, err)
		}
		if d.Next != harness.NextContinue && d.Next != harness.NextWait {
			return d
		}
		e.clock.Advance(time.Duration(d.WaitSeconds) * time.Second)
	}
	e.t.Fatal("run did not reach a decision in 100 steps")
	return harness.Decision{}
}

func (e *env) events(runID string) []run.Event {
	e.t.Helper()
	evs, err := e.store.ReadEvents(e.ctx, runID, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// checkGapless fails unless the run's events are numbered 1..n.
func (e *env) checkGapless(runID string) []run.Event {
	e.t.Helper()
	evs := e.events(runID)
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			e.t.Fatalf("event %d has seq %d: the log has a gap or duplicate", i, ev.Seq)
		}
	}
	return evs
}

func count(evs []run.Event, typ run.EventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func (e *env) getRun(id string) run.Run {
	e.t.Helper()
	r, err := e.store.GetRun(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) pendingApproval(runID string) run.Approval {
	e.t.Helper()
	aps, err := e.store.ListApprovals(e.ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ap := range aps {
		if ap.Status == run.ApprovalPending {
			return ap
		}
	}
	e.t.Fatalf("no pending approval on %s (have %d)", runID, len(aps))
	return run.Approval{}
}

func (e *env) decide(runID string, ap run.Approval, approve bool) {
	e.t.Helper()
	if _, err := e.store.DecideApproval(e.ctx, store.Decision{RunID: runID, ApprovalID: ap.ID, Approve: approve, ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
		e.t.Fatal(err)
	}
}

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
