package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// parkUpgradeBlocked puts a run of alice's in needs_human as the version
// check does at an approval: the approval cancelled, nothing to settle.
func (e *env) parkUpgradeBlocked() run.Run {
	e.t.Helper()
	r := e.newRun("alice", run.InputQueue)
	args := json.RawMessage(`{"title":"Q3"}`)
	hash, _ := run.ArgsHash(args)
	e.commit(r.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusRunning},
		PlanItems:    []run.PlanItem{{ID: "item_1", Order: 1, Tool: "publish", Args: args, ArgsHash: hash, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval}},
		NewApprovals: []run.Approval{{ID: "apr_1", PlanItemID: "item_1", Tool: "publish", Mode: run.ModeMutating, Args: args}}})
	e.commit(r.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusNeedsHuman, Error: strPtr("agent version a → b: schema changed")},
		CancelApprovals: []string{"apr_1"}, Events: []run.Event{{Type: run.EventRunNeedsHuman}}})
	return r
}

// TestResolve: bad input is refused naming the field, and changes
// nothing; a decision on a run that does not wait for one is a 409; a
// deny is recorded with who decided, the run is running and started
// again; a second decision finds it moved on.
func TestResolve(t *testing.T) {
	e := newEnv(t, nil)
	r := e.parkUpgradeBlocked()
	path := "/v1/runs/" + r.ID + "/resolve"
	bad := []struct{ name, body, field string }{
		{"no decision", `{"reason":"x"}`, "decision"},
		{"unknown decision", `{"decision":"approve","reason":"x"}`, "decision"},
		{"no reason", `{"decision":"deny"}`, "reason"},
		{"unknown field", `{"decision":"deny","reason":"x","when":"now"}`, "when"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.do("POST", path, aliceToken, tc.body, nil)
			if code != http.StatusBadRequest || !strings.Contains(string(body), `"field":"`+tc.field+`"`) {
				t.Fatalf("%d %s, want 400 naming %q", code, body, tc.field)
			}
		})
	}
	if code, _, _ := e.do("POST", path, bobToken, `{"decision":"deny","reason":"x"}`, nil); code != http.StatusNotFound {
		t.Fatalf("another owner's run: %d, want 404", code)
	}
	if got, _ := e.store.GetRun(t.Context(), r.ID); got.Status != run.StatusNeedsHuman {
		t.Fatalf("refused requests moved the run: %s", got.Status)
	}
	settling := e.parkNeedsHuman("op_1")
	code, _, body := e.do("POST", "/v1/runs/"+settling.ID+"/resolve", aliceToken, `{"decision":"deny","reason":"x"}`, nil)
	if code != http.StatusConflict || !strings.Contains(string(body), api.CodeNotResolvable) {
		t.Fatalf("resolve over a needs_human operation: %d %s, want 409 %s", code, body, api.CodeNotResolvable)
	}

	var after api.Run
	e.doJSON("POST", path, aliceToken, `{"decision":"deny","reason":"title is headline now"}`, nil, http.StatusOK, &after)
	if after.Status != run.StatusRunning || after.Error != "" {
		t.Fatalf("run %s (%q) after the decision, want running with no error", after.Status, after.Error)
	}
	if calls := e.starter.Calls(); len(calls) != 1 || calls[0] != r.ID {
		t.Fatalf("starts %v: the run must be started again", calls)
	}
	if ap, _ := e.store.GetApproval(t.Context(), r.ID, "apr_1"); ap.Status != run.ApprovalDenied || ap.DecidedBy != "alice" {
		t.Fatalf("approval %s by %q, want denied by alice", ap.Status, ap.DecidedBy)
	}
	code, _, body = e.do("POST", path, aliceToken, `{"decision":"old_version","reason":"again"}`, nil)
	if code != http.StatusConflict || !strings.Contains(string(body), api.CodeNotResolvable) {
		t.Fatalf("second decision: %d %s, want 409 %s", code, body, api.CodeNotResolvable)
	}
}
