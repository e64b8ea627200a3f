package storetest

import (
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// testChildRuns: a child run keeps its lineage; creating it again for the
// same sub-agent call is a lookup that writes nothing; another caller
// cannot take its id; ListRuns finds a run's children by Parent.
func testChildRuns(t *testing.T, e *env) {
	parent := e.create()
	opID := "op_1"
	child := func(caller string) run.Run {
		return e.newRun(func(r *run.Run) {
			r.ID = run.ChildRunID(parent.ID, opID)
			r.SessionID = "sess-child"
			r.Agent = "writer"
			r.Caller = run.Caller{RunID: caller, PlanItemID: "item_1", OperationID: opID, Depth: 1}
		})
	}
	first, created, err := e.s.CreateRun(e.ctx, child(parent.ID))
	must(t, err)
	if !created || first.Caller != child(parent.ID).Caller {
		t.Fatalf("created=%v caller=%+v", created, first.Caller)
	}
	read, err := e.s.GetRun(e.ctx, first.ID)
	must(t, err)
	if !reflect.DeepEqual(read, first) {
		t.Fatalf("GetRun\n%s\nwant\n%s", dump(read), dump(first))
	}
	again, created, err := e.s.CreateRun(e.ctx, child(parent.ID))
	must(t, err)
	if created || !reflect.DeepEqual(again, first) {
		t.Fatalf("second create: created=%v\n%s\nwant\n%s", created, dump(again), dump(first))
	}
	if evs := e.checkGapless(e.s, first.ID); len(evs) != 1 {
		t.Fatalf("the child has %d events after two creates, want 1", len(evs))
	}
	_, _, err = e.s.CreateRun(e.ctx, child("run_someone_else"))
	wantErr(t, err, store.ErrConflict)
	plain := e.newRun(func(r *run.Run) { r.ID = first.ID })
	_, _, err = e.s.CreateRun(e.ctx, plain)
	wantErr(t, err, store.ErrConflict)

	e.create() // a run that is nobody's child
	page, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{Parent: parent.ID})
	must(t, err)
	if len(page.Runs) != 1 || page.Runs[0].ID != first.ID {
		t.Fatalf("ListRuns(Parent) = %s, want the one child", dump(page.Runs))
	}
	page, err = e.s.ListRuns(e.ctx, store.ListRunsQuery{Parent: first.ID})
	must(t, err)
	if len(page.Runs) != 0 {
		t.Fatalf("a childless run lists %d children", len(page.Runs))
	}
	_, _, err = e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.Caller = run.Caller{RunID: parent.ID} }))
	wantErr(t, err, store.ErrInvalid)
}
