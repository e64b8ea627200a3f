package harnesstest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Clock is a settable test clock. Every reading moves it 1ms, so that
// events are ordered in time without a test sleeping; Advance jumps it
// (a lease that expires, a deadline that passes).
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a Clock at a fixed time, the same in every run.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

// Now reads the clock, and moves it 1ms.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Env is one test's world: a SQLite store at Dir/keel.db and a file
// artifact store at Dir/artifacts, both on Clock, in the test's temporary
// directory (removed with it). Store is the concrete backend, so that a
// test can wrap it (a commit that fails, a commit that is measured) and
// hand the wrapper to Harness.
type Env struct {
	T     testing.TB
	Ctx   context.Context
	Clock *Clock
	Store *sqlite.Store
	Arts  *artfs.Store
	Dir   string
}

// NewEnv opens a fresh Env; the store is closed when the test ends.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	dir := t.TempDir()
	clk := NewClock()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "keel.db"), sqlite.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artfs.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	return &Env{T: t, Ctx: context.Background(), Clock: clk, Store: st, Arts: arts, Dir: dir}
}

// Harness builds a harness over st (nil: e.Store), e.Arts and e.Clock,
// owned by "test-worker"; mod, when set, changes its options first.
func (e *Env) Harness(st harness.Store, agents harness.Agents, mod func(*harness.Options)) *harness.Harness {
	e.T.Helper()
	if st == nil {
		st = e.Store
	}
	o := harness.Options{Store: st, Artifacts: e.Arts, Agents: agents, Owner: "test-worker", Clock: e.Clock.Now}
	if mod != nil {
		mod(&o)
	}
	h, err := harness.New(o)
	if err != nil {
		e.T.Fatal(err)
	}
	return h
}

// Scripted is the scripted model playing script (package scripted's JSON).
func (e *Env) Scripted(script string) model.Model {
	e.T.Helper()
	m, err := scripted.Parse([]byte(script))
	if err != nil {
		e.T.Fatal(err)
	}
	return model.Direct(m)
}

// Agent is one agent, name, answered by script, with tools.
func (e *Env) Agent(name string, script string, tools ...tool.Tool) harness.AgentMap {
	e.T.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		e.T.Fatal(err)
	}
	return harness.AgentMap{name: {Name: name, Model: e.Scripted(script), Tools: reg, MaxTokens: 100}}
}

// CreateRun creates a run of agent in session, owned by "alice", with the
// default limits and the queue input policy; mod, when set, changes it
// first.
func (e *Env) CreateRun(agent, session string, mod func(*run.Run)) run.Run {
	e.T.Helper()
	r := run.Run{ID: run.NewID("run"), SessionID: session, Owner: "alice", Agent: agent, Request: "Write the research report.",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
	if mod != nil {
		mod(&r)
	}
	got, _, err := e.Store.CreateRun(e.Ctx, r)
	if err != nil {
		e.T.Fatal(err)
	}
	return got
}

// StepUntil steps the run until a decision other than continue or wait,
// moving the clock over each wait as the state machine's timer would;
// a Step's error, or 100 Steps without such a decision, fails the test.
func (e *Env) StepUntil(h *harness.Harness, runID string) harness.Decision {
	e.T.Helper()
	for i := 0; i < 100; i++ {
		d, err := h.Step(e.Ctx, runID, time.Minute)
		if err != nil {
			e.T.Fatalf("step %d: %v", i, err)
		}
		if d.Next != harness.NextContinue && d.Next != harness.NextWait {
			return d
		}
		e.Clock.Advance(time.Duration(d.WaitSeconds) * time.Second)
	}
	e.T.Fatal("run did not reach a decision in 100 steps")
	return harness.Decision{}
}

// Events is the run's event log (its first 1,000 events).
func (e *Env) Events(runID string) []run.Event {
	e.T.Helper()
	evs, err := e.Store.ReadEvents(e.Ctx, runID, 0, 1000)
	if err != nil {
		e.T.Fatal(err)
	}
	return evs
}

// CheckGapless is Events, failing the test unless they are numbered 1..n.
func (e *Env) CheckGapless(runID string) []run.Event {
	e.T.Helper()
	evs := e.Events(runID)
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			e.T.Fatalf("event %d has seq %d: the log has a gap or duplicate", i, ev.Seq)
		}
	}
	return evs
}

// Count is how many of evs are of type typ.
func Count(evs []run.Event, typ run.EventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// GetRun reads the run.
func (e *Env) GetRun(id string) run.Run {
	e.T.Helper()
	r, err := e.Store.GetRun(e.Ctx, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

// PendingApproval is the run's pending approval; none fails the test.
func (e *Env) PendingApproval(runID string) run.Approval {
	e.T.Helper()
	aps, err := e.Store.ListApprovals(e.Ctx, runID)
	if err != nil {
		e.T.Fatal(err)
	}
	for _, ap := range aps {
		if ap.Status == run.ApprovalPending {
			return ap
		}
	}
	e.T.Fatalf("no pending approval on %s (have %d)", runID, len(aps))
	return run.Approval{}
}

// Decide decides ap as "bob", on its own args hash.
func (e *Env) Decide(runID string, ap run.Approval, approve bool) {
	e.T.Helper()
	if _, err := e.Store.DecideApproval(e.Ctx, store.Decision{RunID: runID, ApprovalID: ap.ID, Approve: approve, ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
		e.T.Fatal(err)
	}
}
