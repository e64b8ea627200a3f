package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/doctor"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// fixedDeployment reports a fixed composition.
type fixedDeployment struct{}

func (fixedDeployment) Deployment(context.Context) doctor.Facts {
	var f doctor.Facts
	f.Executor, f.Store, f.Artifacts = "local", doctor.Backend{Kind: "sqlite", Location: "k.db"}, doctor.Backend{Kind: "fs", Location: "a"}
	f.Agents = []doctor.Agent{{Name: "research", Model: "scripted", Tools: []doctor.Tool{{Name: "post", Mode: "mutating", Effect: true, Destination: "d"}}}}
	return f
}

func TestExplainBundleAndDeployment(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	e.awaitApproval(r.ID, `{"text":"hello"}`)

	var st explain.Story
	e.doJSON("GET", "/v1/runs/"+r.ID+"/explain", aliceToken, "", nil, http.StatusOK, &st)
	if st.RunID != r.ID || st.Status != run.StatusAwaitingApproval || len(st.Open) != 1 || st.Open[0].Kind != "approval" || !strings.Contains(st.Text, "keel approve "+r.ID) {
		t.Fatalf("story %+v", st)
	}
	code, h, body := e.do("GET", "/v1/runs/"+r.ID+"/explain?format=text", aliceToken, "", nil)
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") || string(body) != st.Text {
		t.Fatalf("text: %d %s %q", code, h.Get("Content-Type"), body)
	}
	code, h, body = e.do("GET", "/v1/runs/"+r.ID+"/bundle", aliceToken, "", nil)
	if code != http.StatusOK || h.Get("Content-Type") != "application/gzip" || !strings.Contains(h.Get("Content-Disposition"), "debug-bundle-awaiting_approval.tar.gz") ||
		h.Get("X-Content-SHA256") != run.HashBytes(body) {
		t.Fatalf("bundle: %d %v", code, h)
	}
	files, err := telemetry.ReadArchive(body)
	if err != nil || len(files) != len(telemetry.Files) {
		t.Fatalf("bundle files %d, %v", len(files), err)
	}

	// Another principal's run is not found, like every run endpoint.
	for _, p := range []string{"/explain", "/bundle"} {
		if code, _, body := e.do("GET", "/v1/runs/"+r.ID+p, bobToken, "", nil); code != http.StatusNotFound {
			t.Errorf("bob GET %s: %d %s", p, code, body)
		}
		if code, _, _ := e.do("GET", "/v1/runs/"+r.ID+p, "", "", nil); code != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d", p, code)
		}
	}
	code, _, body = e.do("GET", "/v1/runs/"+r.ID+"/explain?format=yaml", aliceToken, "", nil)
	var eb api.ErrorBody
	if code != http.StatusBadRequest || json.Unmarshal(body, &eb) != nil || eb.Error.Field != "format" || eb.Error.Code != api.CodeInvalidField {
		t.Errorf("format=yaml: %d %s", code, body)
	}

	var rep api.DeploymentReport
	e.doJSON("GET", "/v1/deployment", aliceToken, "", nil, http.StatusOK, &rep)
	if len(rep.Answers) != 10 || rep.Gaps == 0 || !strings.Contains(rep.Text, "d promises neither idempotency nor lookup") {
		t.Fatalf("deployment report: %d answers, %d gaps\n%s", len(rep.Answers), rep.Gaps, rep.Text)
	}
}

func TestExplainWithoutRecordsIsNotFound(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	h, err := api.New(api.Deps{Store: e.store, Starter: e.starter, Resumer: e.resumer, Auth: api.Tokens{aliceToken: "alice"}, Agents: api.AgentSet{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/runs/" + r.ID + "/explain", "/v1/runs/" + r.ID + "/bundle", "/v1/runs/" + r.ID + "/version", "/v1/deployment"} {
		req, _ := http.NewRequest("GET", p, nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `"not_found"`) {
			t.Errorf("%s: %d %s", p, w.Code, w.Body.String())
		}
	}
}
