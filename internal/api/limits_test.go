package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// pauseAtLimit parks a run of alice's, under policy, on a raise request,
// as the harness does when its agent's policy pauses at max_spend.
func (e *env) pauseAtLimit(policy run.InputPolicy) (run.Run, run.Approval) {
	e.t.Helper()
	r := e.newRun("alice", policy)
	args, _ := json.Marshal(harness.RaiseArgs{Limit: "max_spend", Now: 1000, RaiseBy: 500, After: 1500})
	ap := run.Approval{ID: "apr_limit_max_spend_1000", Tool: harness.RaiseLimitTool, Mode: run.ModeMutating, Args: args}
	e.commit(r.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusAwaitingApproval}, NewApprovals: []run.Approval{ap}})
	got, err := e.store.GetApproval(context.Background(), r.ID, ap.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return r, got
}

func TestDecideLimit(t *testing.T) {
	e := newEnv(t, nil)
	r, ap := e.pauseAtLimit(run.InputQueue)
	path := "/v1/runs/" + r.ID + "/limits"
	bad := []struct{ name, body, field string }{
		{"no decision", `{}`, "decision"},
		{"unknown decision", `{"decision":"double"}`, "decision"},
		{"unknown limit", `{"decision":"raise","limit":"max_money"}`, "limit"},
		{"unknown field", `{"decision":"raise","by":5}`, "by"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.do("POST", path, aliceToken, tc.body, nil)
			if code != http.StatusBadRequest || !strings.Contains(string(body), `"field":"`+tc.field+`"`) {
				t.Fatalf("%d %s, want 400 naming %q", code, body, tc.field)
			}
		})
	}
	if code, _, body := e.do("POST", path, aliceToken, `{"decision":"raise","limit":"max_tokens"}`, nil); code != http.StatusConflict ||
		!strings.Contains(string(body), `"field":"limit"`) {
		t.Fatalf("another limit than the pause's: %d %s", code, body)
	}
	if code, _, _ := e.do("POST", path, bobToken, `{"decision":"raise"}`, nil); code != http.StatusNotFound {
		t.Fatalf("another owner's run: %d, want 404", code)
	}
	var got api.Approval
	e.doJSON("POST", path, aliceToken, `{"decision":"raise","limit":"max_spend","reason":"worth it"}`, nil, http.StatusOK, &got)
	if got.ApprovalID != ap.ID || got.Status != run.ApprovalApproved {
		t.Fatalf("decided %+v", got)
	}
	if calls := e.resumer.Calls(); len(calls) != 1 || calls[0].ID != ap.ID {
		t.Fatalf("resumed %+v", calls)
	}
	// Answered, but the run still waits (its wake may have been lost):
	// another answer is refused, the same answer wakes it again.
	if code, _, body := e.do("POST", path, aliceToken, `{"decision":"stop"}`, nil); code != http.StatusConflict ||
		!strings.Contains(string(body), api.CodeApprovalNotPending) || !strings.Contains(string(body), "already approved by alice") {
		t.Fatalf("another answer: %d %s", code, body)
	}
	e.doJSON("POST", path, aliceToken, `{"decision":"raise"}`, nil, http.StatusOK, &got)
	if calls := e.resumer.Calls(); got.Status != run.ApprovalApproved || len(calls) != 2 || calls[1].ID != ap.ID {
		t.Fatalf("repeated raise: %+v, resumed %+v", got, calls)
	}
	// A retry that finds the run moving on (the sweeper woke it) is
	// answered the same; once it ended, the run waits on no raise.
	e.commit(r.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusRunning}})
	e.doJSON("POST", path, aliceToken, `{"decision":"raise"}`, nil, http.StatusOK, &got)
	e.commit(r.ID, store.Commit{Run: &store.RunPatch{Status: run.StatusCompleted}})
	if code, _, body := e.do("POST", path, aliceToken, `{"decision":"raise"}`, nil); code != http.StatusConflict ||
		!strings.Contains(string(body), api.CodeNotPaused) {
		t.Fatalf("answer after the run ended: %d %s", code, body)
	}
}
