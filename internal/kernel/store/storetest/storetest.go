package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Open opens a Store on the database an Opener made. It may be called more
// than once: after a Close it must reach the data written before, and while
// another Store is open on the same database both must work.
type Open func(clock func() time.Time) (store.Store, error)

// Opener makes a fresh, empty database for one test, registers its removal
// with t.Cleanup, and returns how to open it.
type Opener func(t *testing.T) Open

// Clock is a manual clock, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// epoch is where every test's clock starts; nanoseconds are set so that a
// backend that truncates time is caught.
var epoch = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// Run runs the whole conformance suite against the backend newDB opens.
func Run(t *testing.T, newDB Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"CreateRun", testCreateRun},
		{"CreateRunIdempotent", testCreateRunIdempotent},
		{"AgentVersionKept", testAgentVersionKept},
		{"GetRunUnknown", testGetRunUnknown},
		{"ListRuns", testListRuns},
		{"ChildRuns", testChildRuns},
		{"Lease", testLease},
		{"LeaseTerminal", testLeaseTerminal},
		{"NeedsHumanWaitsForAPerson", testNeedsHumanWaitsForAPerson},
		{"EndsOnlySettled", testEndsOnlySettled},
		{"Settle", testSettle},
		{"Resolve", testResolve},
		{"CommitStep", testCommitStep},
		{"CommitAllOrNothing", testCommitAllOrNothing},
		{"CommitFenced", testCommitFenced},
		{"IllegalTransition", testIllegalTransition},
		{"Events", testEvents},
		{"ConcurrentAppenders", testConcurrentAppenders},
		{"ConcurrentLeaseTakers", testConcurrentLeaseTakers},
		{"TwoStoresOneDatabase", testTwoStores},
		{"Operations", testOperations},
		{"Approvals", testApprovals},
		{"Outbox", testOutbox},
		{"Budget", testBudget},
		{"ConcurrentReservations", testConcurrentReservations},
		{"Cancel", testCancel},
		{"CancelOnce", testCancelOnce},
		{"Inputs", testInputs},
		{"Checkpoints", testCheckpoints},
		{"Signals", testSignals},
		{"Reopen", testReopen},
		{"BadInput", testBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newEnv(t, newDB))
		})
	}
}

// env is one subtest's database, store and clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	open  Open
	clock *Clock
	s     store.Store
}

func newEnv(t *testing.T, newDB Opener) *env {
	t.Helper()
	e := &env{t: t, ctx: t.Context(), open: newDB(t), clock: NewClock(epoch)}
	e.s = e.openStore()
	return e
}

// openStore opens another Store on the env's database, closed at cleanup
// (Close may then be called a second time; backends must tolerate that).
func (e *env) openStore() store.Store {
	e.t.Helper()
	s, err := e.open(e.clock.Now)
	if err != nil {
		e.t.Fatalf("open store: %v", err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// newRun returns a valid run that has not been stored.
func (e *env) newRun(mod ...func(*run.Run)) run.Run {
	r := run.Run{
		ID:          run.NewID("run"),
		SessionID:   "sess-1",
		Owner:       "alice",
		Agent:       "research",
		Request:     "summarise the quarterly report",
		InputPolicy: run.InputQueue,
		Limits:      run.Limits{MaxSteps: 50, MaxTokens: 10_000, MaxSpendMicroUSD: 1_000_000, MaxToolCalls: 20},
	}
	for _, m := range mod {
		m(&r)
	}
	return r
}

// create stores a new run and returns it.
func (e *env) create(mod ...func(*run.Run)) run.Run {
	e.t.Helper()
	r, created, err := e.s.CreateRun(e.ctx, e.newRun(mod...))
	must(e.t, err)
	if !created {
		e.t.Fatal("CreateRun: created = false for a new run")
	}
	return r
}

// leased creates a run and takes its lease; it returns the run and token.
func (e *env) leased(mod ...func(*run.Run)) (run.Run, int64) {
	e.t.Helper()
	r := e.create(mod...)
	r, err := e.s.AcquireLease(e.ctx, r.ID, "worker-1", time.Minute)
	must(e.t, err)
	return r, r.Lease.Token
}

func (e *env) finish(runID string, token int64, to run.Status) {
	e.t.Helper()
	r, err := e.s.GetRun(e.ctx, runID)
	must(e.t, err)
	if r.Status == run.StatusCreated && to != run.StatusFailed && to != run.StatusCancelled {
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: runID, Token: token, Run: &store.RunPatch{Status: run.StatusRunning}})
		must(e.t, err)
	}
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: runID, Token: token,
		Run: &store.RunPatch{Status: to, ReleaseLease: true}})
	must(e.t, err)
}

func ev(typ run.EventType, data string) run.Event {
	e := run.Event{Type: typ}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}

func str(s string) *string { return &s }

// snapshot is everything stored about one run, to prove a refused write
// changed nothing.
type snapshot struct {
	Run         run.Run
	Events      []run.Event
	PlanItems   []run.PlanItem
	Checkpoints []run.Checkpoint
	Operations  []run.Operation
	Approvals   []run.Approval
	Inputs      []run.Input
}

func (e *env) snap(s store.Store, runID string) snapshot {
	e.t.Helper()
	var sn snapshot
	var err error
	sn.Run, err = s.GetRun(e.ctx, runID)
	must(e.t, err)
	sn.Events = e.allEvents(s, runID)
	sn.PlanItems, err = s.ListPlanItems(e.ctx, runID)
	must(e.t, err)
	sn.Checkpoints, err = s.ListCheckpoints(e.ctx, runID, 0, 0)
	must(e.t, err)
	sn.Operations, err = s.ListOperations(e.ctx, runID, false)
	must(e.t, err)
	sn.Approvals, err = s.ListApprovals(e.ctx, runID)
	must(e.t, err)
	sn.Inputs, err = s.ListInputs(e.ctx, runID, false)
	must(e.t, err)
	return sn
}

func (e *env) sameSnap(want, got snapshot) {
	e.t.Helper()
	if !reflect.DeepEqual(want, got) {
		e.t.Fatalf("stored data changed:\nbefore %s\nafter  %s", dump(want), dump(got))
	}
}

func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// allEvents reads a run's whole log, page by page.
func (e *env) allEvents(s store.Store, runID string) []run.Event {
	e.t.Helper()
	var out []run.Event
	after := int64(0)
	for {
		page, err := s.ReadEvents(e.ctx, runID, after, 7)
		must(e.t, err)
		out = append(out, page...)
		if len(page) < 7 {
			return out
		}
		after = page[len(page)-1].Seq
	}
}

// checkGapless fails unless the log is seq 1..n exactly once each, and n is
// the run's LastSeq.
func (e *env) checkGapless(s store.Store, runID string) []run.Event {
	e.t.Helper()
	evs := e.allEvents(s, runID)
	for i, x := range evs {
		if x.Seq != int64(i+1) {
			e.t.Fatalf("event %d has seq %d: log is not gapless", i, x.Seq)
		}
		if x.RunID != runID {
			e.t.Fatalf("event %d has run id %q", x.Seq, x.RunID)
		}
	}
	r, err := s.GetRun(e.ctx, runID)
	must(e.t, err)
	if r.LastSeq != int64(len(evs)) {
		e.t.Fatalf("run LastSeq = %d, log has %d events", r.LastSeq, len(evs))
	}
	if problems := run.VerifyChain(runID, evs, r.LastSeq, r.LastHash); len(problems) > 0 {
		e.t.Fatalf("the event chain is broken: %v", problems)
	}
	return evs
}

func eventTypes(evs []run.Event) []run.EventType {
	out := make([]run.EventType, len(evs))
	for i, x := range evs {
		out[i] = x.Type
	}
	return out
}

// settle releases reserved and records used as a Step does: in a commit
// under the run's lease. It returns the budget stored afterwards.
func (e *env) settle(runID string, reserved, used store.Amounts) (run.Budget, error) {
	r, err := e.s.AcquireLease(e.ctx, runID, "settler", time.Minute)
	if err != nil {
		return run.Budget{}, err
	}
	if _, err := e.s.Commit(e.ctx, store.Commit{RunID: runID, Token: r.Lease.Token, Released: reserved, Used: used,
		Run: &store.RunPatch{ReleaseLease: true}}); err != nil {
		return run.Budget{}, err
	}
	got, err := e.s.GetRun(e.ctx, runID)
	return got.Budget, err
}

// operation finds one operation of a run through ListOperations.
func (e *env) operation(runID, opID string) (run.Operation, error) {
	ops, err := e.s.ListOperations(e.ctx, runID, false)
	if err != nil {
		return run.Operation{}, err
	}
	for _, op := range ops {
		if op.ID == opID {
			return op, nil
		}
	}
	return run.Operation{}, fmt.Errorf("operation %q of run %q: %w", opID, runID, store.ErrNotFound)
}
