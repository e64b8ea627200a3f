package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestNextMove: GET /v1/runs/{id} names who moves every run that has not
// ended, and the command; a finished run has none.
func TestNextMove(t *testing.T) {
	e := newEnv(t, nil)
	get := func(id string) api.Run {
		var v api.Run
		e.doJSON("GET", "/v1/runs/"+id, aliceToken, "", nil, http.StatusOK, &v)
		return v
	}

	created := e.newRun("alice", run.InputQueue)
	if n := get(created.ID).Next; n == nil || n.Actor != api.ActorWorker {
		t.Fatalf("created run: next %+v, want the worker", n)
	}

	waiting := e.newRun("alice", run.InputQueue)
	ap := e.awaitApproval(waiting.ID, `{"title":"x"}`)
	if n := get(waiting.ID).Next; n == nil || n.Actor != api.ActorPerson || n.Command != "keel approve "+waiting.ID+" "+ap.ID {
		t.Fatalf("awaiting approval: next %+v", n)
	}
	// Decided, the wait not woken yet: Keel's move, not a person's.
	if _, err := e.store.DecideApproval(context.Background(), store.Decision{RunID: waiting.ID, ApprovalID: ap.ID, Approve: true,
		ArgsHash: ap.ArgsHash, DecidedBy: "alice"}); err != nil {
		t.Fatal(err)
	}
	if n := get(waiting.ID).Next; n == nil || n.Actor != api.ActorWorker || !strings.Contains(n.Why, "being woken") {
		t.Fatalf("decided, not woken: next %+v", n)
	}

	paused, _ := e.pauseAtLimit(run.InputQueue)
	if n := get(paused.ID).Next; n == nil || n.Actor != api.ActorPerson || n.Command != "keel raise "+paused.ID {
		t.Fatalf("paused at a limit: next %+v", n)
	}

	stuck := e.newRun("alice", run.InputQueue)
	e.commit(stuck.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusRunning},
		NewOperations: []run.Operation{{ID: "op_1", Tool: "publish", ArgsHash: strings.Repeat("a", 64), Destination: "d"}}})
	e.commit(stuck.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusNeedsHuman},
		OperationUpdates: []store.OperationUpdate{{ID: "op_1", Status: run.OpNeedsHuman}}})
	if n := get(stuck.ID).Next; n == nil || n.Actor != api.ActorPerson || !strings.HasPrefix(n.Command, "keel settle "+stuck.ID+" op_1 ") {
		t.Fatalf("needs_human: next %+v", n)
	}

	done := e.newRun("alice", run.InputQueue)
	e.commit(done.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusRunning}})
	e.commit(done.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusCompleted}})
	if n := get(done.ID).Next; n != nil {
		t.Fatalf("completed run: next %+v, want none", n)
	}
}
