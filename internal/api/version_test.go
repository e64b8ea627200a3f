package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// versionedRun creates a run of research under version v for owner.
func (e *env) versionedRun(owner, v string) run.Run {
	e.t.Helper()
	r, _, err := e.store.CreateRun(context.Background(), run.Run{
		ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: owner, Agent: "research",
		Request: "find things", InputPolicy: run.InputQueue, Limits: run.DefaultLimits(), AgentVersion: v,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// confirmOnceApproved gives the run an approval of post (confirm_once)
// that alice approved, for a call that has not run: the session holds a
// grant of post, and the approval is still open.
func (e *env) confirmOnceApproved(runID string) run.Approval {
	e.t.Helper()
	args := `{"text":"hi"}`
	h, err := run.ArgsHash([]byte(args))
	if err != nil {
		e.t.Fatal(err)
	}
	id, pi := run.NewID("apr"), run.NewID("pi")
	e.commit(runID, store.Commit{
		Run:          &store.RunPatch{Status: run.StatusRunning},
		PlanItems:    []run.PlanItem{{ID: pi, CallID: "call_1", Order: 1, Tool: "post", Args: json.RawMessage(args), ArgsHash: h, Mode: run.ModeConfirmOnce, Status: run.PlanAwaitingApproval}},
		NewApprovals: []run.Approval{{ID: id, PlanItemID: pi, Tool: "post", Mode: run.ModeConfirmOnce, Args: json.RawMessage(args), ArgsHash: h}},
	})
	e.setStatus(runID, run.StatusAwaitingApproval)
	ap, err := e.store.DecideApproval(context.Background(), store.Decision{RunID: runID, ApprovalID: id, Approve: true, ArgsHash: h, DecidedBy: "alice"})
	if err != nil {
		e.t.Fatal(err)
	}
	return ap
}

// TestRunVersion: GET /v1/runs/{id}/version serves the records version,
// its stored definition and the open records the version check compares
// (upgrade-check --api decides on them); the usual 404 otherwise.
func TestRunVersion(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	v1 := agentver.Definition{Agent: "research", Model: "scripted:x", Build: "b1", Version: strings.Repeat("a", 64),
		Tools: []agentver.ToolDef{{Name: "post", Mode: run.ModeConfirmOnce, Schema: json.RawMessage(`{"type":"object"}`), SchemaSHA256: "s"}}}
	if err := agentver.Save(ctx, e.arts, v1); err != nil {
		t.Fatal(err)
	}
	r := e.versionedRun("alice", v1.Version)
	ap := e.confirmOnceApproved(r.ID)

	var got api.RunVersion
	e.doJSON("GET", "/v1/runs/"+r.ID+"/version", aliceToken, "", nil, http.StatusOK, &got)
	if got.RunID != r.ID || got.Agent != "research" || got.Status != run.StatusAwaitingApproval || got.AgentVersion != v1.Version || got.RecordsVersion != v1.Version {
		t.Fatalf("run fields: %+v", got)
	}
	if got.Definition == nil || got.Definition.Version != v1.Version || len(got.Definition.Tools) != 1 || got.DefinitionMissing != "" {
		t.Fatalf("definition %+v, missing %q", got.Definition, got.DefinitionMissing)
	}
	o := got.Open
	if o == nil || len(o.Approvals) != 1 || o.Approvals[0].ID != ap.ID || len(o.Calls) != 1 || o.Calls[0].Tool != "post" ||
		string(o.Calls[0].Args) != `{"text":"hi"}` || len(o.Grants) != 1 || o.Grants[0] != "post" || len(o.Operations) != 0 {
		t.Fatalf("open records: %+v", o)
	}

	// A checkpoint written under another version makes it the records
	// version; its definition was never stored: the reason a Step gives.
	cp := run.Checkpoint{ID: run.NewCheckpointID(9), Seq: 9, Step: 1, State: []byte(`{"messages":[],"agent_version":"` + strings.Repeat("b", 64) + `"}`)}
	e.commit(r.ID, store.Commit{Checkpoint: &cp, Run: &store.RunPatch{CheckpointID: cp.ID}})
	got = api.RunVersion{}
	e.doJSON("GET", "/v1/runs/"+r.ID+"/version", aliceToken, "", nil, http.StatusOK, &got)
	if got.RecordsVersion != strings.Repeat("b", 64) || got.Definition != nil || got.Open != nil ||
		got.DefinitionMissing != "the definition of version bbbbbbbbbbbb is not stored: nothing to check the run's records against" {
		t.Fatalf("unstored version: %+v", got)
	}
	old := e.newRun("alice", run.InputQueue)
	got = api.RunVersion{}
	e.doJSON("GET", "/v1/runs/"+old.ID+"/version", aliceToken, "", nil, http.StatusOK, &got)
	if got.RecordsVersion != "" || got.Definition != nil || got.Open != nil || !strings.Contains(got.DefinitionMissing, "before agent versions") {
		t.Fatalf("run from before versions: %+v", got)
	}

	for _, tc := range []struct{ path, token string }{
		{"/v1/runs/run_nosuch/version", aliceToken},
		{"/v1/runs/" + r.ID + "/version", bobToken}, // another principal's run
		{"/v1/runs/bad%20id/version", aliceToken},
	} {
		code, _, body := e.do("GET", tc.path, tc.token, "", nil)
		var eb api.ErrorBody
		if code != http.StatusNotFound || json.Unmarshal(body, &eb) != nil || eb.Error == nil || eb.Error.Code != api.CodeNotFound || eb.Error.Message != "run not found" {
			t.Errorf("GET %s: %d %s", tc.path, code, body)
		}
	}
	if code, _, _ := e.do("GET", "/v1/runs/"+r.ID+"/version", "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("anonymous: %d", code)
	}
}
