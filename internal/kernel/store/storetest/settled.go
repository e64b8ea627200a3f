package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// testEndsOnlySettled: the store itself refuses to end a run (completed,
// failed, cancelled) while one of its operations is pending or
// needs_human, writing nothing; an ending commit that settles its last
// operation in the same write is accepted.
func testEndsOnlySettled(t *testing.T, e *env) {
	ends := []run.Status{run.StatusCompleted, run.StatusFailed, run.StatusCancelled}
	running := func(t *testing.T) (run.Run, int64) {
		t.Helper()
		r, tok := e.leased()
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{Status: run.StatusRunning}})
		must(t, err)
		return r, tok
	}
	intent := func(t *testing.T, r run.Run, tok int64, id string) {
		t.Helper()
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			NewOperations: []run.Operation{{ID: id, PlanItemID: "p_" + id, Tool: "publish", Destination: "blog", ArgsHash: "h_" + id}},
			Events:        []run.Event{{Type: run.EventOpIntent, OperationID: id}}})
		must(t, err)
	}
	end := func(r run.Run, tok int64, to run.Status, c store.Commit) error {
		c.RunID, c.Token = r.ID, tok
		c.Run = &store.RunPatch{Status: to, ReleaseLease: true}
		c.Events = append(c.Events, run.Event{Type: endEvent(to)})
		_, err := e.s.Commit(e.ctx, c)
		return err
	}
	for _, to := range ends {
		t.Run("Pending/"+string(to), func(t *testing.T) {
			r, tok := running(t)
			intent(t, r, tok, "op_a")
			before := e.snap(e.s, r.ID)
			wantErr(t, end(r, tok, to, store.Commit{}), store.ErrUnsettled)
			e.sameSnap(before, e.snap(e.s, r.ID))
		})
		t.Run("CreatedInTheEndingCommit/"+string(to), func(t *testing.T) {
			r, tok := running(t)
			before := e.snap(e.s, r.ID)
			err := end(r, tok, to, store.Commit{NewOperations: []run.Operation{{ID: "op_n", Tool: "publish", ArgsHash: "h"}}})
			wantErr(t, err, store.ErrUnsettled)
			e.sameSnap(before, e.snap(e.s, r.ID))
		})
		t.Run("NeedsHuman/"+string(to), func(t *testing.T) {
			r, tok := running(t)
			intent(t, r, tok, "op_h")
			_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
				OperationUpdates: []store.OperationUpdate{{ID: "op_h", Status: run.OpNeedsHuman, Error: "unknown outcome"}}})
			must(t, err)
			before := e.snap(e.s, r.ID)
			wantErr(t, end(r, tok, to, store.Commit{}), store.ErrUnsettled)
			e.sameSnap(before, e.snap(e.s, r.ID))
		})
		t.Run("SettledInTheSameCommit/"+string(to), func(t *testing.T) {
			r, tok := running(t)
			intent(t, r, tok, "op_s")
			intent(t, r, tok, "op_f")
			_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
				OperationUpdates: []store.OperationUpdate{{ID: "op_f", Status: run.OpFailed, Error: "refused"}}})
			must(t, err)
			must(t, end(r, tok, to, store.Commit{OperationUpdates: []store.OperationUpdate{{ID: "op_s", Status: run.OpSucceeded, ExternalID: "x"}}}))
			got, err := e.s.GetRun(e.ctx, r.ID)
			must(t, err)
			if got.Status != to {
				t.Fatalf("status %s, want %s", got.Status, to)
			}
		})
	}
	t.Run("NeedsHumanRunMayWait", func(t *testing.T) {
		r, tok := running(t)
		intent(t, r, tok, "op_w")
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			Run:              &store.RunPatch{Status: run.StatusNeedsHuman, ReleaseLease: true},
			OperationUpdates: []store.OperationUpdate{{ID: "op_w", Status: run.OpNeedsHuman, Error: "unknown outcome"}},
			Events:           []run.Event{{Type: run.EventRunNeedsHuman}}})
		must(t, err)
	})
}

// testNeedsHumanWaitsForAPerson: no worker takes a needs_human run; a
// person's cancel ends it, recorded with who, in one write.
func testNeedsHumanWaitsForAPerson(t *testing.T, e *env) {
	r, tok := e.leased()
	e.finish(r.ID, tok, run.StatusNeedsHuman)
	before := e.snap(e.s, r.ID)
	_, err := e.s.AcquireLease(e.ctx, r.ID, "w2", time.Minute)
	wantErr(t, err, store.ErrNeedsHuman)
	_, err = e.s.AcquireLease(e.ctx, r.ID, "worker-1", time.Minute) // not even its last holder
	wantErr(t, err, store.ErrNeedsHuman)
	e.sameSnap(before, e.snap(e.s, r.ID))

	got, _, err := e.s.RequestCancel(e.ctx, r.ID, "alice")
	must(t, err)
	if got.Status != run.StatusCancelled || got.Lease.Owner != "" {
		t.Fatalf("after a person's cancel: status %s, lease %+v; want cancelled, no lease", got.Status, got.Lease)
	}
	stored, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if stored.Status != run.StatusCancelled {
		t.Fatalf("stored status %s, want cancelled", stored.Status)
	}
	evs, err := e.s.ReadEvents(e.ctx, r.ID, 0, 100)
	must(t, err)
	last := evs[len(evs)-1]
	if last.Type != run.EventRunCancelled || !jsonHas(last.Data, "by", "alice") {
		t.Fatalf("last event %s %s, want run_cancelled by alice", last.Type, last.Data)
	}
	if evs[len(evs)-2].Type != run.EventCancelRequested {
		t.Fatalf("event before it %s, want cancel_requested", evs[len(evs)-2].Type)
	}
	_, err = e.s.AcquireLease(e.ctx, r.ID, "w2", time.Minute)
	wantErr(t, err, store.ErrTerminal)
	_, _, err = e.s.RequestCancel(e.ctx, r.ID, "alice")
	wantErr(t, err, store.ErrTerminal)
}

func endEvent(to run.Status) run.EventType {
	switch to {
	case run.StatusCompleted:
		return run.EventRunCompleted
	case run.StatusCancelled:
		return run.EventRunCancelled
	}
	return run.EventRunFailed
}

// jsonHas reports whether data is a JSON object whose key holds the string want.
func jsonHas(data []byte, key, want string) bool {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	return m[key] == want
}

// testSettle: a person's answer on a needs_human operation, recorded in
// one write with who and why; refused for an operation or run that is not
// needs_human; exactly one of two racing settles wins.
func testSettle(t *testing.T, e *env) {
	parked := func(t *testing.T, ids ...string) run.Run {
		t.Helper()
		r, tok := e.leased()
		c := store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{Status: run.StatusRunning}}
		for _, id := range ids {
			c.NewOperations = append(c.NewOperations, run.Operation{ID: id, PlanItemID: "p_" + id, Tool: "publish", ArgsHash: "h_" + id, Attempts: 1})
		}
		_, err := e.s.Commit(e.ctx, c)
		must(t, err)
		c = store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{Status: run.StatusNeedsHuman, Error: str("unknown outcome"), ReleaseLease: true},
			Events: []run.Event{{Type: run.EventRunNeedsHuman}}}
		for _, id := range ids {
			c.OperationUpdates = append(c.OperationUpdates, store.OperationUpdate{ID: id, Status: run.OpNeedsHuman, Error: "unknown outcome"})
		}
		_, err = e.s.Commit(e.ctx, c)
		must(t, err)
		return r
	}
	settle := func(r run.Run, op string, o store.SettleOutcome, ext string) (run.Run, error) {
		return e.s.SettleOperation(e.ctx, store.Settlement{RunID: r.ID, OperationID: op, Outcome: o, ExternalID: ext,
			By: "alice", Reason: "checked the destination's console"})
	}
	opStatus := func(t *testing.T, r run.Run, id string) run.Operation {
		t.Helper()
		op, err := e.operation(r.ID, id)
		must(t, err)
		return op
	}
	t.Run("Happened", func(t *testing.T) {
		r := parked(t, "op_1")
		got, err := settle(r, "op_1", store.SettleHappened, "post-9")
		must(t, err)
		if got.Status != run.StatusRunning || got.Error != "" {
			t.Fatalf("run %s %q after settling its one operation, want running", got.Status, got.Error)
		}
		if op := opStatus(t, r, "op_1"); op.Status != run.OpSucceeded || op.ExternalID != "post-9" {
			t.Fatalf("operation %s %q, want succeeded post-9", op.Status, op.ExternalID)
		}
		evs, err := e.s.ReadEvents(e.ctx, r.ID, 0, 100)
		must(t, err)
		last := evs[len(evs)-1]
		if last.Type != run.EventOpSettled || last.OperationID != "op_1" || !jsonHas(last.Data, "by", "alice") || !jsonHas(last.Data, "outcome", "happened") {
			t.Fatalf("last event %s %s %s, want op_settled by alice", last.Type, last.OperationID, last.Data)
		}
		a, err := store.ReadAudit(e.ctx, e.s, r.ID)
		must(t, err)
		if len(a.Problems) != 0 {
			t.Fatalf("the settle broke the hash chain: %v", a.Problems)
		}
		_, err = e.s.AcquireLease(e.ctx, r.ID, "w2", time.Minute)
		must(t, err) // a worker may take it again
	})
	t.Run("Refused", func(t *testing.T) {
		r := parked(t, "op_1")
		before := e.snap(e.s, r.ID)
		_, err := settle(r, "op_nope", store.SettleHappened, "")
		wantErr(t, err, store.ErrNotFound)
		_, err = settle(r, "op_1", "maybe", "")
		wantErr(t, err, store.ErrInvalid)
		_, err = e.s.SettleOperation(e.ctx, store.Settlement{RunID: r.ID, OperationID: "op_1", Outcome: store.SettleHappened, By: "alice"})
		wantErr(t, err, store.ErrInvalid) // no reason
		_, err = settle(r, "op_1", store.SettleNotHappened, "post-1")
		wantErr(t, err, store.ErrInvalid) // an external id for what did not happen
		e.sameSnap(before, e.snap(e.s, r.ID))
		_, err = settle(r, "op_1", store.SettleHappened, "x")
		must(t, err)
		_, err = settle(r, "op_1", store.SettleHappened, "x")
		wantErr(t, err, store.ErrConflict) // the run moved on
		running, _ := e.leased()
		_, err = settle(running, "op_1", store.SettleHappened, "x")
		wantErr(t, err, store.ErrConflict)
	})
	t.Run("OneOfTwo", func(t *testing.T) {
		r := parked(t, "op_a", "op_b")
		got, err := settle(r, "op_a", store.SettleHappened, "x")
		must(t, err)
		if got.Status != run.StatusNeedsHuman {
			t.Fatalf("run %s with op_b still needs_human, want needs_human", got.Status)
		}
		_, err = e.s.AcquireLease(e.ctx, r.ID, "w2", time.Minute)
		wantErr(t, err, store.ErrNeedsHuman)
		got, err = settle(r, "op_b", store.SettleNotHappened, "")
		must(t, err)
		if got.Status != run.StatusRunning {
			t.Fatalf("run %s after settling both, want running", got.Status)
		}
		if op := opStatus(t, r, "op_b"); op.Status != run.OpPending || !strings.HasPrefix(op.Error, store.NotHappenedPrefix+"alice") {
			t.Fatalf("op_b %s %q, want pending again: did not happen, as alice established", op.Status, op.Error)
		}
	})
	t.Run("NotHappenedIsAttemptedAgain", func(t *testing.T) {
		r := parked(t, "op_1")
		_, err := settle(r, "op_1", store.SettleNotHappened, "")
		must(t, err)
		if op := opStatus(t, r, "op_1"); op.Status != run.OpPending || op.Attempts != 1 || op.IdempotencyKey != "op_1" {
			t.Fatalf("operation %s, %d attempts, key %q: want pending, 1 attempt, its own key", op.Status, op.Attempts, op.IdempotencyKey)
		}
		l, err := e.s.AcquireLease(e.ctx, r.ID, "w2", time.Minute)
		must(t, err)
		again := store.OperationUpdate{ID: "op_1", Status: run.OpPending}
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, OperationUpdates: []store.OperationUpdate{again}})
		wantErr(t, err, store.ErrInvalid) // a new attempt counts
		again.AttemptsDelta, again.ExternalID = 1, "post-1"
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, OperationUpdates: []store.OperationUpdate{again}})
		wantErr(t, err, store.ErrInvalid) // and records no outcome
		again.ExternalID = ""
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, OperationUpdates: []store.OperationUpdate{again}})
		must(t, err)
		if op := opStatus(t, r, "op_1"); op.Status != run.OpPending || op.Attempts != 2 {
			t.Fatalf("operation %s, %d attempts after its intent again, want pending, 2", op.Status, op.Attempts)
		}
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token,
			OperationUpdates: []store.OperationUpdate{{ID: "op_1", Status: run.OpSucceeded, ExternalID: "post-2"}}})
		must(t, err)
		if op := opStatus(t, r, "op_1"); op.Status != run.OpSucceeded || op.Attempts != 2 || op.ExternalID != "post-2" || op.Error != "" {
			t.Fatalf("operation %s, %d attempts, %q, error %q: want succeeded, 2, post-2, no error", op.Status, op.Attempts, op.ExternalID, op.Error)
		}
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, OperationUpdates: []store.OperationUpdate{{ID: "op_1", Status: run.OpPending, AttemptsDelta: 1}}})
		wantErr(t, err, store.ErrConflict) // only a pending operation is attempted again
	})
	t.Run("GiveUp", func(t *testing.T) {
		r := parked(t, "op_1")
		got, err := e.s.SettleOperation(e.ctx, store.Settlement{RunID: r.ID, OperationID: "op_1", Outcome: store.SettleGiveUp,
			By: "bob", Reason: "the destination keeps no log"})
		must(t, err)
		stored, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		for _, x := range []run.Run{got, stored} {
			if x.Status != run.StatusFailed || x.Error != "the destination keeps no log" {
				t.Fatalf("run %s %q, want failed with the reason", x.Status, x.Error)
			}
		}
		if op := opStatus(t, r, "op_1"); op.Status != run.OpNeedsHuman {
			t.Fatalf("operation %s, want still needs_human: nobody knows", op.Status)
		}
		evs, err := e.s.ReadEvents(e.ctx, r.ID, 0, 100)
		must(t, err)
		if last := evs[len(evs)-1]; last.Type != run.EventRunFailed || !jsonHas(last.Data, "by", "bob") {
			t.Fatalf("last event %s %s, want run_failed by bob", last.Type, last.Data)
		}
	})
	t.Run("Race", func(t *testing.T) {
		r := parked(t, "op_1")
		errs := make(chan error, 4)
		for range 4 {
			go func() { _, err := settle(r, "op_1", store.SettleHappened, "x"); errs <- err }()
		}
		won := 0
		for range 4 {
			err := <-errs
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("a losing settle: %v, want ErrConflict", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d settles won, want exactly 1", won)
		}
		evs, err := e.s.ReadEvents(e.ctx, r.ID, 0, 100)
		must(t, err)
		n := 0
		for _, ev := range evs {
			if ev.Type == run.EventOpSettled {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d op_settled events, want 1", n)
		}
	})
}
