package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
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
