package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// parkNeedsHuman puts a run of alice's in needs_human over operation op,
// as the harness does when a destination can neither be asked nor retried.
func (e *env) parkNeedsHuman(op string) run.Run {
	e.t.Helper()
	r := e.newRun("alice", run.InputQueue)
	e.commit(r.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusRunning},
		NewOperations: []run.Operation{{ID: op, PlanItemID: "item_1", Tool: "publish", Destination: "blog", ArgsHash: "h"}}})
	e.commit(r.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusNeedsHuman, Error: strPtr("unknown outcome")},
		OperationUpdates: []store.OperationUpdate{{ID: op, Status: run.OpNeedsHuman, Error: "unknown outcome"}},
		Events:           []run.Event{{Type: run.EventRunNeedsHuman}}})
	return r
}

func strPtr(s string) *string { return &s }

func TestSettle(t *testing.T) {
	e := newEnv(t, nil)
	r := e.parkNeedsHuman("op_1")
	path := "/v1/runs/" + r.ID + "/operations/op_1/settle"

	var list api.OperationList
	e.doJSON("GET", "/v1/runs/"+r.ID+"/operations", aliceToken, "", nil, http.StatusOK, &list)
	if len(list.Operations) != 1 || list.Operations[0].Status != run.OpNeedsHuman || list.Operations[0].IdempotencyKey != "op_1" {
		t.Fatalf("operations %+v", list.Operations)
	}

	bad := []struct {
		name, body, field string
		status            int
	}{
		{"no outcome", `{"reason":"x"}`, "outcome", 400},
		{"unknown outcome", `{"outcome":"maybe","reason":"x"}`, "outcome", 400},
		{"no reason", `{"outcome":"happened"}`, "reason", 400},
		{"external id for what did not happen", `{"outcome":"not_happened","external_id":"p-1","reason":"x"}`, "external_id", 400},
		{"unknown field", `{"outcome":"happened","reason":"x","when":"now"}`, "when", 400},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.do("POST", path, aliceToken, tc.body, nil)
			if code != tc.status || (tc.field != "" && !strings.Contains(string(body), `"field":"`+tc.field+`"`)) {
				t.Fatalf("%d %s, want %d naming %q", code, body, tc.status, tc.field)
			}
		})
	}
	if code, _, _ := e.do("POST", path, bobToken, `{"outcome":"happened","reason":"x"}`, nil); code != http.StatusNotFound {
		t.Fatalf("another owner's run: %d, want 404", code)
	}
	if code, _, _ := e.do("POST", "/v1/runs/"+r.ID+"/operations/op_nope/settle", aliceToken, `{"outcome":"happened","reason":"x"}`, nil); code != http.StatusNotFound {
		t.Fatalf("unknown operation: %d, want 404", code)
	}
	if op, _ := e.store.ListOperations(t.Context(), r.ID, false); op[0].Status != run.OpNeedsHuman {
		t.Fatalf("refused requests changed the operation: %s", op[0].Status)
	}

	var after api.Run
	e.doJSON("POST", path, aliceToken, `{"outcome":"happened","external_id":"post-3","reason":"found it in the blog's admin"}`, nil, http.StatusOK, &after)
	if after.Status != run.StatusRunning {
		t.Fatalf("run %s after the settle, want running", after.Status)
	}
	if calls := e.starter.Calls(); len(calls) != 1 || calls[0] != r.ID {
		t.Fatalf("starts %v: the run must be started again", calls)
	}
	code, _, body := e.do("POST", path, aliceToken, `{"outcome":"happened","reason":"again"}`, nil)
	if code != http.StatusConflict || !strings.Contains(string(body), api.CodeNotSettleable) {
		t.Fatalf("second settle: %d %s, want 409 %s", code, body, api.CodeNotSettleable)
	}
	evs, err := e.store.ReadEvents(t.Context(), r.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Type != run.EventOpSettled || !strings.Contains(string(last.Data), `"by":"alice"`) {
		t.Fatalf("last event %s %s, want op_settled by alice", last.Type, last.Data)
	}
}
