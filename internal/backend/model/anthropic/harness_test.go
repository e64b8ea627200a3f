package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/model/anthropic"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/harness/harnesstest"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/modeltest"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// TestClientErrorFailsRunAtOnce: a 401 from Anthropic's wire is not
// retried by the transport, and not by the harness's step either: the run
// fails after one call, and run_failed names the status, the provider and
// the request id the provider sent. (Package harness holds the same rule
// for any provider's client error, on kernel types only.)
func TestClientErrorFailsRunAtOnce(t *testing.T) {
	e := harnesstest.NewEnv(t)
	body := `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`
	var replies []modeltest.Reply
	for range 10 {
		replies = append(replies, modeltest.Reply{Status: 401, Body: body, Header: map[string]string{"content-type": "application/json"}})
	}
	srv := modeltest.NewServer(t, wire, replies...)
	p, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-test-key-123456", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewTransport(p, model.TransportOptions{Provider: anthropic.Name,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	h := e.Harness(nil, harness.AgentMap{"a": {Name: "a", Model: m, Tools: reg, MaxTokens: 100}}, nil)
	r := e.CreateRun("a", "s1", nil)

	d, err := h.Step(e.Ctx, r.ID, time.Minute)
	if err != nil {
		t.Fatalf("step: %v (a client error must fail the run, not the step)", err)
	}
	if d.Next != harness.NextFailed {
		t.Fatalf("decision %+v, want failed", d)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the provider got %d requests, want 1", n)
	}
	got := e.GetRun(r.ID)
	if got.Status != run.StatusFailed {
		t.Fatalf("run is %s, want failed", got.Status)
	}
	evs := e.CheckGapless(r.ID)
	last := evs[len(evs)-1]
	if last.Type != run.EventRunFailed {
		t.Fatalf("last event %s, want run_failed", last.Type)
	}
	var data struct {
		Status    int    `json:"status"`
		RequestID string `json:"request_id"`
		Provider  string `json:"provider"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(last.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.Status != 401 || data.RequestID != "req_001" || data.Provider != anthropic.Name {
		t.Fatalf("run_failed data %s: want status 401, request id req_001, provider %s", last.Data, anthropic.Name)
	}
}
