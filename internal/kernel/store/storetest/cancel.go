package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// testCancelOnce: ten concurrent cancels of one run record one
// cancel_requested (issue #18); a cancel of a run already flagged, with
// no pending approval left, writes nothing.
func testCancelOnce(t *testing.T, e *env) {
	r, _ := e.leased()
	before := len(e.checkGapless(e.s, r.ID))
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() {
			got, _, err := e.s.RequestCancel(e.ctx, r.ID, "carol")
			if err == nil && !got.CancelRequested {
				t.Errorf("cancel %d returned a run without its cancel flag", i)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("cancel %d: %v", i, err)
		}
	}
	evs := e.checkGapless(e.s, r.ID)[before:]
	if types := eventTypes(evs); len(types) != 1 || types[0] != run.EventCancelRequested {
		t.Fatalf("ten cancels appended %v, want one cancel_requested", types)
	}
	snap := e.snap(e.s, r.ID)
	if _, _, err := e.s.RequestCancel(e.ctx, r.ID, "dave"); err != nil {
		t.Fatal(err)
	}
	e.sameSnap(snap, e.snap(e.s, r.ID))
}

func testCancel(t *testing.T, e *env) {
	r, tok := e.leased()
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
		Run: &store.RunPatch{Status: run.StatusRunning},
		NewApprovals: []run.Approval{
			{ID: "ap1", PlanItemID: "p1", Tool: "a", Mode: run.ModeMutating, Args: json.RawMessage(`{"n":1}`)},
			{ID: "ap2", PlanItemID: "p2", Tool: "b", Mode: run.ModeMutating, Args: json.RawMessage(`{"n":2}`)},
			{ID: "ap3", PlanItemID: "p3", Tool: "c", Mode: run.ModeMutating, Args: json.RawMessage(`{"n":3}`)},
		}})
	must(t, err)
	_, err = e.s.AttachTaskToken(e.ctx, r.ID, "ap2", "tt-2")
	must(t, err)
	h3, _ := run.ArgsHash([]byte(`{"n":3}`))
	_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap3", Approve: true, ArgsHash: h3, DecidedBy: "x"})
	must(t, err)
	before := e.checkGapless(e.s, r.ID)

	got, cancelled, err := e.s.RequestCancel(e.ctx, r.ID, "carol")
	must(t, err)
	if !got.CancelRequested || got.Status != run.StatusRunning || got.Lease != r.Lease {
		t.Fatalf("run after cancel request: %s", dump(got))
	}
	if len(cancelled) != 2 || cancelled[0].ID != "ap1" || cancelled[1].ID != "ap2" || cancelled[1].TaskToken != "tt-2" ||
		cancelled[0].Status != run.ApprovalCancelled {
		t.Fatalf("cancelled approvals = %s", dump(cancelled))
	}
	stored, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if !stored.CancelRequested {
		t.Fatal("cancel flag not stored")
	}
	for id, want := range map[string]run.ApprovalStatus{"ap1": run.ApprovalCancelled, "ap2": run.ApprovalCancelled, "ap3": run.ApprovalApproved} {
		a, err := e.s.GetApproval(e.ctx, r.ID, id)
		must(t, err)
		if a.Status != want {
			t.Fatalf("approval %s is %s, want %s", id, a.Status, want)
		}
	}
	after := e.checkGapless(e.s, r.ID)
	newTypes := eventTypes(after[len(before):])
	wantTypes := []run.EventType{run.EventCancelRequested, run.EventApprovalCancelled, run.EventApprovalCancelled}
	if !reflect.DeepEqual(newTypes, wantTypes) {
		t.Fatalf("events appended by cancel = %v, want %v", newTypes, wantTypes)
	}
	if !strings.Contains(string(after[len(before)].Data), "carol") {
		t.Fatalf("cancel_requested does not say who: %s", after[len(before)].Data)
	}
	// A cancelled approval can no longer be decided.
	h1, _ := run.ArgsHash([]byte(`{"n":1}`))
	_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap1", Approve: true, ArgsHash: h1, DecidedBy: "x"})
	wantErr(t, err, store.ErrConflict)
	// The worker still holds its lease and records the cancellation.
	e.finish(r.ID, tok, run.StatusCancelled)
	t.Run("Terminal", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		_, _, err := e.s.RequestCancel(e.ctx, r.ID, "carol")
		wantErr(t, err, store.ErrTerminal)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
	t.Run("Unknown", func(t *testing.T) {
		_, _, err := e.s.RequestCancel(e.ctx, "run_nope", "carol")
		wantErr(t, err, store.ErrNotFound)
	})
}
