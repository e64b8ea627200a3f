package storetest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func testCreateRun(t *testing.T, e *env) {
	in := e.newRun(func(r *run.Run) {
		r.Command = "summarise report.pdf"
		r.Limits.Deadline = epoch.Add(time.Hour)
		r.ParentRunID = "run_parent"
		r.ForkCheckpointID = "cp_7"
		r.TraceParent = run.NewTraceParent()
	})
	got, created, err := e.s.CreateRun(e.ctx, in)
	must(t, err)
	if !created {
		t.Fatal("created = false")
	}
	want := in
	want.Status = run.StatusCreated
	want.LastSeq = 1
	want.LastHash = run.Chain(in.ID, "", []run.Event{{Type: run.EventRunCreated, Time: epoch}})
	want.CreatedAt, want.UpdatedAt = epoch, epoch
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CreateRun returned\n%s\nwant\n%s", dump(got), dump(want))
	}
	read, err := e.s.GetRun(e.ctx, in.ID)
	must(t, err)
	if !reflect.DeepEqual(read, want) {
		t.Fatalf("GetRun returned\n%s\nwant\n%s", dump(read), dump(want))
	}
	evs := e.checkGapless(e.s, in.ID)
	if len(evs) != 1 || evs[0].Type != run.EventRunCreated || !evs[0].Time.Equal(epoch) {
		t.Fatalf("events after create = %s, want one run_created at seq 1", dump(evs))
	}

	t.Run("TraceParentKept", func(t *testing.T) {
		// The trace context is written once, at creation: a lease and a
		// step's commit leave it as it was, so every Step joins one trace.
		leased, err := e.s.AcquireLease(e.ctx, in.ID, "worker-1", time.Minute)
		must(t, err)
		if leased.TraceParent != in.TraceParent {
			t.Fatalf("AcquireLease: trace_parent = %q, want %q", leased.TraceParent, in.TraceParent)
		}
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: in.ID, Token: leased.Lease.Token,
			Run: &store.RunPatch{Status: run.StatusRunning, StepsDelta: 1, ReleaseLease: true}})
		must(t, err)
		read, err := e.s.GetRun(e.ctx, in.ID)
		must(t, err)
		if read.TraceParent != in.TraceParent {
			t.Fatalf("after a commit: trace_parent = %q, want %q", read.TraceParent, in.TraceParent)
		}
		_, _, err = e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.TraceParent = "00-not-a-trace-01" }))
		wantErr(t, err, store.ErrInvalid)
	})

	t.Run("StoreOwnsCounters", func(t *testing.T) {
		// Budget, lease, seq and step fields of the input are ignored.
		r, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) {
			r.Budget.TokensUsed = 99
			r.Lease = run.Lease{Owner: "x", Token: 9}
			r.LastSeq, r.StepCount, r.CancelRequested = 5, 5, true
		}))
		must(t, err)
		if r.Budget != (run.Budget{}) || r.Lease.Token != 0 || r.Lease.Owner != "" || r.LastSeq != 1 || r.StepCount != 0 || r.CancelRequested {
			t.Fatalf("store kept caller's counters: %s", dump(r))
		}
	})
	t.Run("SameIDConflict", func(t *testing.T) {
		_, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.ID = in.ID; r.Request = "other" }))
		wantErr(t, err, store.ErrConflict)
		r, err := e.s.GetRun(e.ctx, in.ID)
		must(t, err)
		if r.Request != in.Request {
			t.Fatalf("conflicting create changed the run: %q", r.Request)
		}
	})
	t.Run("SessionOfAnotherOwner", func(t *testing.T) {
		r := e.newRun(func(r *run.Run) { r.Owner = "mallory" })
		_, _, err := e.s.CreateRun(e.ctx, r)
		wantErr(t, err, store.ErrConflict)
		_, err = e.s.GetRun(e.ctx, r.ID)
		wantErr(t, err, store.ErrNotFound)
	})
}

func testCreateRunIdempotent(t *testing.T, e *env) {
	first := e.newRun(func(r *run.Run) { r.ClientKey = "key-1" })
	a, created, err := e.s.CreateRun(e.ctx, first)
	must(t, err)
	if !created {
		t.Fatal("first create: created = false")
	}
	e.clock.Advance(time.Second)
	// A retry carries a new run id (the API makes one per request) and the same key.
	retry := e.newRun(func(r *run.Run) { r.ClientKey = "key-1"; r.Request = "different text" })
	b, created, err := e.s.CreateRun(e.ctx, retry)
	must(t, err)
	if created {
		t.Fatal("retry: created = true")
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("retry returned another run:\n%s\n%s", dump(a), dump(b))
	}
	if _, err := e.s.GetRun(e.ctx, retry.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retry's id was stored: %v", err)
	}
	if evs := e.checkGapless(e.s, a.ID); len(evs) != 1 {
		t.Fatalf("retry appended events: %d", len(evs))
	}
	// The key is scoped to the owner.
	other, created, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) {
		r.ClientKey, r.Owner, r.SessionID = "key-1", "bob", "sess-bob"
	}))
	must(t, err)
	if !created || other.ID == a.ID {
		t.Fatalf("same key of another owner: created=%t id=%s", created, other.ID)
	}
	page, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{})
	must(t, err)
	if len(page.Runs) != 2 {
		t.Fatalf("%d runs stored, want 2", len(page.Runs))
	}
}

func testGetRunUnknown(t *testing.T, e *env) {
	_, err := e.s.GetRun(e.ctx, "run_nope")
	wantErr(t, err, store.ErrNotFound)
}

func testListRuns(t *testing.T, e *env) {
	// 9 runs, one per second: owners alternate, sessions by owner, the
	// first three moved to running.
	var all []run.Run
	for i := range 9 {
		owner, sess := "alice", "sess-a"
		if i%2 == 1 {
			owner, sess = "bob", "sess-b"
		}
		r := e.create(func(r *run.Run) { r.Owner, r.SessionID = owner, sess })
		if i < 3 {
			l, err := e.s.AcquireLease(e.ctx, r.ID, "w", time.Minute)
			must(t, err)
			_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, Run: &store.RunPatch{Status: run.StatusRunning}})
			must(t, err)
		}
		all = append(all, r)
		e.clock.Advance(time.Second)
	}
	// Two runs in the same instant must still page stably (tie on time).
	same1 := e.create(func(r *run.Run) { r.ID = "run_tie_a" })
	same2 := e.create(func(r *run.Run) { r.ID = "run_tie_b" })
	all = append(all, same1, same2)

	// Newest first; among equal times, the larger id first.
	want := func(keep func(i int, r run.Run) bool) []string {
		var out []string
		for i := len(all) - 1; i >= 0; i-- {
			if keep(i, all[i]) {
				out = append(out, all[i].ID)
			}
		}
		return out
	}
	collect := func(q store.ListRunsQuery) []string {
		t.Helper()
		var got []string
		seen := map[string]bool{}
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("pagination does not end")
			}
			p, err := e.s.ListRuns(e.ctx, q)
			must(t, err)
			if q.Limit > 0 && len(p.Runs) > q.Limit {
				t.Fatalf("page of %d runs, limit %d", len(p.Runs), q.Limit)
			}
			for _, r := range p.Runs {
				if seen[r.ID] {
					t.Fatalf("run %s listed twice", r.ID)
				}
				seen[r.ID] = true
				got = append(got, r.ID)
			}
			if p.NextPageToken == "" {
				return got
			}
			q.PageToken = p.NextPageToken
		}
	}
	cases := []struct {
		name string
		q    store.ListRunsQuery
		keep func(i int, r run.Run) bool
	}{
		{"All", store.ListRunsQuery{}, func(int, run.Run) bool { return true }},
		{"AllPaged", store.ListRunsQuery{Limit: 3}, func(int, run.Run) bool { return true }},
		{"PageOfOne", store.ListRunsQuery{Limit: 1}, func(int, run.Run) bool { return true }},
		{"Owner", store.ListRunsQuery{Owner: "bob", Limit: 2}, func(i int, r run.Run) bool { return r.Owner == "bob" }},
		{"Session", store.ListRunsQuery{SessionID: "sess-a", Limit: 2}, func(i int, r run.Run) bool { return r.SessionID == "sess-a" }},
		{"StatusRunning", store.ListRunsQuery{Status: run.StatusRunning, Limit: 2}, func(i int, r run.Run) bool { return i < 3 }},
		{"StatusCreated", store.ListRunsQuery{Status: run.StatusCreated}, func(i int, r run.Run) bool { return i >= 3 }},
		{"OwnerAndStatus", store.ListRunsQuery{Owner: "alice", Status: run.StatusRunning}, func(i int, r run.Run) bool { return i < 3 && r.Owner == "alice" }},
		{"NoMatch", store.ListRunsQuery{Owner: "nobody"}, func(int, run.Run) bool { return false }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := collect(tc.q)
			w := want(tc.keep)
			if !reflect.DeepEqual(got, w) && !(len(got) == 0 && len(w) == 0) {
				t.Fatalf("ListRuns(%+v) = %v, want %v", tc.q, got, w)
			}
		})
	}
	t.Run("LastPageHasNoToken", func(t *testing.T) {
		p, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{Limit: 11})
		must(t, err)
		if len(p.Runs) != 11 || p.NextPageToken != "" {
			t.Fatalf("exact-size page: %d runs, token %q", len(p.Runs), p.NextPageToken)
		}
	})
	t.Run("BadToken", func(t *testing.T) {
		_, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{PageToken: "not a token!"})
		wantErr(t, err, store.ErrInvalid)
	})
	t.Run("BadStatus", func(t *testing.T) {
		_, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{Status: "sleeping"})
		wantErr(t, err, store.ErrInvalid)
	})
}

func testLease(t *testing.T, e *env) {
	r := e.create()
	l, err := e.s.AcquireLease(e.ctx, r.ID, "w1", time.Minute)
	must(t, err)
	if l.Lease.Owner != "w1" || l.Lease.Token != 1 || !l.Lease.Expiry.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("first lease = %+v, want w1 token 1 expiring at now+1m", l.Lease)
	}
	got, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if got.Lease != l.Lease {
		t.Fatalf("stored lease %+v, returned %+v", got.Lease, l.Lease)
	}

	t.Run("RefusedWhileHeld", func(t *testing.T) {
		e.clock.Advance(59 * time.Second)
		_, err := e.s.AcquireLease(e.ctx, r.ID, "w2", time.Minute)
		wantErr(t, err, store.ErrLeaseHeld)
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		if got.Lease != l.Lease {
			t.Fatalf("refused acquire changed the lease: %+v", got.Lease)
		}
	})
	var l2 run.Run
	t.Run("SameOwnerBumps", func(t *testing.T) {
		l2, err = e.s.AcquireLease(e.ctx, r.ID, "w1", time.Minute)
		must(t, err)
		if l2.Lease.Token != 2 || l2.Lease.Owner != "w1" || !l2.Lease.Expiry.Equal(e.clock.Now().Add(time.Minute)) {
			t.Fatalf("re-acquire = %+v, want token 2", l2.Lease)
		}
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: 1, Events: []run.Event{ev(run.EventTurnStarted, "")}})
		wantErr(t, err, store.ErrFenced)
	})
	var l3 run.Run
	t.Run("ExpiredIsFree", func(t *testing.T) {
		e.clock.Advance(time.Minute) // exactly at expiry: free
		l3, err = e.s.AcquireLease(e.ctx, r.ID, "w2", 30*time.Second)
		must(t, err)
		if l3.Lease.Token != 3 || l3.Lease.Owner != "w2" {
			t.Fatalf("takeover = %+v, want w2 token 3", l3.Lease)
		}
		// The old holder is fenced from now on.
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: 2, Run: &store.RunPatch{Status: run.StatusRunning}})
		wantErr(t, err, store.ErrFenced)
		_, err = e.s.AcquireLease(e.ctx, r.ID, "w1", time.Minute)
		wantErr(t, err, store.ErrLeaseHeld)
	})
	t.Run("Release", func(t *testing.T) {
		wantErr(t, e.s.ReleaseLease(e.ctx, r.ID, 2), store.ErrFenced)
		must(t, e.s.ReleaseLease(e.ctx, r.ID, 3))
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		if got.Lease.Owner != "" || got.Lease.Token != 3 {
			t.Fatalf("after release lease = %+v, want no owner, token kept at 3", got.Lease)
		}
		// A released token no longer writes.
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: 3, Events: []run.Event{ev(run.EventTurnStarted, "")}})
		wantErr(t, err, store.ErrFenced)
		// Anyone may take it now, with a higher token.
		l4, err := e.s.AcquireLease(e.ctx, r.ID, "w1", time.Minute)
		must(t, err)
		if l4.Lease.Token != 4 {
			t.Fatalf("token after release = %d, want 4", l4.Lease.Token)
		}
	})
	t.Run("UnknownRun", func(t *testing.T) {
		_, err := e.s.AcquireLease(e.ctx, "run_nope", "w1", time.Minute)
		wantErr(t, err, store.ErrNotFound)
		wantErr(t, e.s.ReleaseLease(e.ctx, "run_nope", 1), store.ErrNotFound)
	})
	t.Run("BadTTL", func(t *testing.T) {
		_, err := e.s.AcquireLease(e.ctx, r.ID, "w9", 0)
		wantErr(t, err, store.ErrInvalid)
	})
}

func testLeaseTerminal(t *testing.T, e *env) {
	for _, st := range []run.Status{run.StatusCompleted, run.StatusFailed, run.StatusCancelled} {
		t.Run(string(st), func(t *testing.T) {
			r, tok := e.leased()
			e.finish(r.ID, tok, st)
			_, err := e.s.AcquireLease(e.ctx, r.ID, "w2", time.Minute)
			wantErr(t, err, store.ErrTerminal)
		})
	}
}

func testIllegalTransition(t *testing.T, e *env) {
	r, tok := e.leased()
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{Status: run.StatusRunning}})
	must(t, err)
	before := e.snap(e.s, r.ID)
	// Nothing leads back to created.
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
		Run:    &store.RunPatch{Status: run.StatusCreated, Output: str("done")},
		Events: []run.Event{ev(run.EventRunCompleted, "")}})
	wantErr(t, err, run.ErrIllegalTransition)
	e.sameSnap(before, e.snap(e.s, r.ID))

	e.finish(r.ID, tok, run.StatusCompleted)
	r2, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if r2.Status != run.StatusCompleted || r2.Lease.Owner != "" {
		t.Fatalf("finish: status %s lease %+v", r2.Status, r2.Lease)
	}
}

// testAgentVersionKept: the version a run was created under is written
// once: a lease and a step's commit leave it, every read returns it, and
// a malformed one is refused.
func testAgentVersionKept(t *testing.T, e *env) {
	in, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.AgentVersion = strings.Repeat("ab", 32) }))
	must(t, err)
	if in.AgentVersion != strings.Repeat("ab", 32) {
		t.Fatalf("CreateRun: agent_version = %q", in.AgentVersion)
	}
	leased, err := e.s.AcquireLease(e.ctx, in.ID, "worker-2", time.Minute)
	must(t, err)
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: in.ID, Token: leased.Lease.Token,
		Run: &store.RunPatch{StepsDelta: 1, ReleaseLease: true}})
	must(t, err)
	read, err := e.s.GetRun(e.ctx, in.ID)
	must(t, err)
	if read.AgentVersion != in.AgentVersion || leased.AgentVersion != in.AgentVersion {
		t.Fatalf("agent_version = %q (leased %q), want %q", read.AgentVersion, leased.AgentVersion, in.AgentVersion)
	}
	page, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{Owner: in.Owner, SessionID: in.SessionID})
	must(t, err)
	for _, r := range page.Runs {
		if r.ID == in.ID && r.AgentVersion != in.AgentVersion {
			t.Fatalf("ListRuns: agent_version = %q, want %q", r.AgentVersion, in.AgentVersion)
		}
	}
	_, _, err = e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.AgentVersion = "V1;DROP" }))
	wantErr(t, err, store.ErrInvalid)
}
