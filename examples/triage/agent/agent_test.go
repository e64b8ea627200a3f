package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/triage/agent"
	"github.com/keelrun/keel/examples/triage/tickets"
	"github.com/keelrun/keel/keeltest"
)

const token = "tk_live_agent_test_77c1"

// start runs the triage agent, driven by script (nil: agent.Script), on
// the embedded runtime against a ticket service in this process.
func start(t *testing.T, script []byte) (*keeltest.Runtime, *tickets.Server) {
	t.Helper()
	svc, err := tickets.NewServer(token, tickets.SampleData())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc)
	t.Cleanup(hs.Close)
	cfg := agent.Config{TicketsURL: hs.URL, TicketsToken: token}
	if script != nil {
		cfg.Model = keel.ScriptedModel(script)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return keeltest.Start(t, a), svc
}

type decision struct {
	tool, mode string
	approve    bool
}

// TestDecisions: what a person decides, and what the service refuses,
// decide what happens to the ticket. Every case's run completes: a denied
// or refused update is answered to the model, which goes on.
func TestDecisions(t *testing.T) {
	tests := []struct {
		name      string
		script    string // "" is agent.Script
		decisions []decision
		applied   int
		requests  int            // update requests the service received
		events    map[string]int // event type → count
		failure   string         // in the tool_failed event, if any
	}{
		{
			name: "approved",
			decisions: []decision{
				{tool: "read_customer", mode: "confirm_once", approve: true},
				{tool: "update_ticket", mode: "mutating", approve: true},
			},
			applied: 1, requests: 1,
			events: map[string]int{"approval_granted": 2, "op_intent": 1, "op_succeeded": 1, "approval_denied": 0},
		},
		{
			name: "update denied",
			decisions: []decision{
				{tool: "read_customer", mode: "confirm_once", approve: true},
				{tool: "update_ticket", mode: "mutating", approve: false},
			},
			applied: 0, requests: 0,
			events: map[string]int{"approval_granted": 1, "approval_denied": 1, "op_intent": 0},
		},
		{
			name: "customer denied",
			decisions: []decision{
				{tool: "read_customer", mode: "confirm_once", approve: false},
				{tool: "update_ticket", mode: "mutating", approve: false},
			},
			applied: 0, requests: 0,
			events: map[string]int{"approval_granted": 0, "approval_denied": 2, "op_intent": 0},
		},
		{
			name: "closed ticket refused by the service",
			script: `{"turns": [{"tool_calls": [{"name": "update_ticket",
				"args": {"ticket_id": "T-1003", "status": "pending", "reply": "Reopening."}}]}], "final": "done"}`,
			decisions: []decision{{tool: "update_ticket", mode: "mutating", approve: true}},
			// Refused at once (keel.Reject): never sent again.
			applied: 0, requests: 1,
			events:  map[string]int{"op_intent": 1, "op_failed": 1, "tool_failed": 1, "op_succeeded": 0, "op_reconciled": 0, "op_uncertain": 0},
			failure: "ticket T-1003 is closed",
		},
		{
			name: "status outside the schema",
			script: `{"turns": [{"tool_calls": [{"name": "update_ticket",
				"args": {"ticket_id": "T-1001", "status": "escalated", "reply": "Escalating."}}]}], "final": "done"}`,
			// Refused before it is recorded or shown to a person.
			applied: 0, requests: 0,
			events:  map[string]int{"approval_requested": 0, "op_intent": 0, "tool_failed": 1},
			failure: "value must be one of 'open', 'pending', 'solved'",
		},
		{
			name: "reply too long for the schema",
			script: fmt.Sprintf(`{"turns": [{"tool_calls": [{"name": "update_ticket",
				"args": {"ticket_id": "T-1001", "status": "pending", "reply": %q}}]}], "final": "done"}`, strings.Repeat("x", 2001)),
			applied: 0, requests: 0,
			events:  map[string]int{"approval_requested": 0, "op_intent": 0, "tool_failed": 1},
			failure: "/reply",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var script []byte
			if tc.script != "" {
				script = []byte(tc.script)
			}
			rt, svc := start(t, script)
			id := rt.StartRun(t, agent.Name, "Triage ticket T-1001")
			for _, d := range tc.decisions {
				ap := rt.WaitApproval(t, id)
				if ap.Tool != d.tool || ap.Mode != d.mode {
					t.Fatalf("approval %+v, want %s (%s)", ap, d.tool, d.mode)
				}
				if d.approve {
					rt.Approve(t, id, ap)
				} else {
					rt.Deny(t, id, ap)
				}
			}
			rt.WaitFor(t, id, "completed")
			if n := len(svc.Applied()); n != tc.applied {
				t.Errorf("%d updates applied, want %d", n, tc.applied)
			}
			if n := svc.UpdateRequests(); n != tc.requests {
				t.Errorf("%d update requests, want %d", n, tc.requests)
			}
			evs := rt.Events(t, id)
			if n := keeltest.Count(evs, "approval_requested"); n != len(tc.decisions) {
				t.Errorf("%d approvals requested, want %d", n, len(tc.decisions))
			}
			for typ, want := range tc.events {
				if n := keeltest.Count(evs, typ); n != want {
					t.Errorf("%d %s, want %d", n, typ, want)
				}
			}
			for _, e := range evs {
				if e.Type == "tool_failed" && !strings.Contains(string(e.Data), tc.failure) {
					t.Errorf("tool_failed %s, want it to say %q", e.Data, tc.failure)
				}
			}
			if b, _ := json.Marshal(evs); bytes.Contains(b, []byte(token)) {
				t.Error("the token is in the event log")
			}
		})
	}
}

// twoCustomers reads two customers' profiles in one run.
const twoCustomers = `{"turns": [
	{"tool_calls": [{"name": "search_tickets", "args": {"ticket_id": "T-1001"}}]},
	{"tool_calls": [{"name": "read_customer", "args": {"customer_id": "{{search_tickets.customer_id}}"}}]},
	{"tool_calls": [{"name": "read_customer", "args": {"customer_id": "c-23"}}]}],
	"final": "read both"}`

// TestConfirmOnceHoldsForTheSession: read_customer asks once; the grant
// covers its later calls in the run, with other arguments, and later runs
// of the same session. Another session asks again.
func TestConfirmOnceHoldsForTheSession(t *testing.T) {
	rt, _ := start(t, []byte(twoCustomers))
	api := httpAPI{t: t, rt: rt}

	first := api.createRun("session-a")
	ap := rt.WaitApproval(t, first)
	if ap.Tool != "read_customer" || ap.Mode != "confirm_once" || string(ap.Args) != `{"customer_id":"c-17"}` {
		t.Fatalf("approval %+v (args %s)", ap, ap.Args)
	}
	rt.Approve(t, first, ap)
	rt.WaitFor(t, first, "completed")
	evs := rt.Events(t, first)
	if n := keeltest.Count(evs, "approval_requested"); n != 1 {
		t.Fatalf("%d approvals in the first run, want 1", n)
	}
	if n := completedCalls(t, evs, "read_customer"); n != 2 {
		t.Fatalf("read_customer completed %d times, want 2", n)
	}

	// The same session: no approval at all.
	second := api.createRun("session-a")
	rt.WaitFor(t, second, "completed")
	if n := keeltest.Count(rt.Events(t, second), "approval_requested"); n != 0 {
		t.Fatalf("%d approvals in the second run of the session, want 0", n)
	}

	// Another session: asked again.
	other := api.createRun("session-b")
	if ap := rt.WaitApproval(t, other); ap.Tool != "read_customer" {
		t.Fatalf("approval %+v in another session", ap)
	}
}

// completedCalls counts the tool_completed events of tool.
func completedCalls(t *testing.T, evs []keeltest.Event, tool string) int {
	t.Helper()
	n := 0
	for _, e := range evs {
		if e.Type != "tool_completed" {
			continue
		}
		var d struct {
			Tool string `json:"tool"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("tool_completed %s: %v", e.Data, err)
		}
		if d.Tool == tool {
			n++
		}
	}
	return n
}

// TestAgentDefaults: a run created without limits or an input policy
// gets the agent's, and input sent while it waits is refused.
func TestAgentDefaults(t *testing.T) {
	rt, _ := start(t, nil)
	api := httpAPI{t: t, rt: rt}
	id := rt.StartRun(t, agent.Name, "Triage ticket T-1001")
	rt.WaitApproval(t, id)

	var r struct {
		InputPolicy string `json:"input_policy"`
		Limits      struct {
			MaxSteps         int64  `json:"max_steps"`
			MaxToolCalls     int64  `json:"max_tool_calls"`
			MaxTokens        int64  `json:"max_tokens"`
			MaxSpendMicroUSD int64  `json:"max_spend_micro_usd"`
			Deadline         string `json:"deadline"`
		} `json:"limits"`
	}
	api.do(http.MethodGet, "/v1/runs/"+id, nil, http.StatusOK, &r)
	l := agent.Limits
	if r.InputPolicy != string(keel.InputReject) || r.Limits.MaxSteps != l.MaxSteps || r.Limits.MaxToolCalls != l.MaxToolCalls ||
		r.Limits.MaxTokens != l.MaxTokens || r.Limits.MaxSpendMicroUSD != l.MaxSpendMicroUSD || r.Limits.Deadline == "" {
		t.Fatalf("run %+v, want the agent's limits %+v with a deadline and input policy reject", r, l)
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	api.do(http.MethodPost, "/v1/runs/"+id+"/input", map[string]string{"text": "also T-1002"}, http.StatusConflict, &e)
	if e.Error.Code != "input_rejected" {
		t.Fatalf("input answered %+v, want input_rejected", e)
	}
}

// TestConfigFromEnv: both variables are required; errors name them.
func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		wantErr  string
		wantURL  string
		wantSecr string
	}{
		{name: "both", env: map[string]string{"TRIAGE_TICKETS_URL": "http://127.0.0.1:8181", "TRIAGE_TICKETS_TOKEN": "s3"},
			wantURL: "http://127.0.0.1:8181", wantSecr: "s3"},
		{name: "no URL", env: map[string]string{"TRIAGE_TICKETS_TOKEN": "s3"}, wantErr: "TRIAGE_TICKETS_URL is not set"},
		{name: "no token", env: map[string]string{"TRIAGE_TICKETS_URL": "http://x"}, wantErr: "TRIAGE_TICKETS_TOKEN is not set"},
		{name: "not http", env: map[string]string{"TRIAGE_TICKETS_URL": "ftp://x", "TRIAGE_TICKETS_TOKEN": "s3"}, wantErr: `TRIAGE_TICKETS_URL "ftp://x"`},
		{name: "no host", env: map[string]string{"TRIAGE_TICKETS_URL": "http://", "TRIAGE_TICKETS_TOKEN": "s3"}, wantErr: `TRIAGE_TICKETS_URL "http://"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := agent.ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3") {
					t.Fatalf("error %v quotes the token", err)
				}
				return
			}
			if err != nil || c.TicketsURL != tc.wantURL || c.TicketsToken != tc.wantSecr {
				t.Fatalf("config %+v, %v", c, err)
			}
		})
	}
}

// httpAPI calls the runtime's HTTP API for what keeltest does not wrap
// (a session id, a run's limits, input).
type httpAPI struct {
	t  *testing.T
	rt *keeltest.Runtime
}

func (a httpAPI) createRun(session string) string {
	a.t.Helper()
	var r struct {
		RunID string `json:"run_id"`
	}
	a.do(http.MethodPost, "/v1/runs", map[string]string{"agent": agent.Name, "input": "Triage ticket T-1001", "session_id": session}, http.StatusCreated, &r)
	return r.RunID
}

func (a httpAPI) do(method, path string, body any, want int, out any) {
	a.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, a.rt.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.rt.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		a.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b.String())
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
}
