package devserver_test

import (
	"net/http"
	"testing"
)

// TestRepeatedCreateAfterTheRunFinished is issue #40 item 4: a create
// repeated with the same Idempotency-Key after the run finished (its
// execution closed) answers 200 with that run, through the API and
// through MCP start_run, instead of 503 start_failed: starting the closed
// execution again was refused as ExecutionAlreadyExists and reported as a
// failed start.
func TestRepeatedCreateAfterTheRunFinished(t *testing.T) {
	for _, be := range backends {
		t.Run(string(be), func(t *testing.T) {
			d := devOn(t, be, nil)
			const body = `{"agent":"research","input":"Durable agents"}`
			var first struct {
				RunID string `json:"run_id"`
			}
			if code, got := d.call("POST", "/v1/runs", body, &first, "Idempotency-Key", "nightly-1"); code != http.StatusCreated {
				t.Fatalf("create: %d %s", code, got)
			}
			// The research run stops at its publish approval; approved, it
			// completes.
			var aps struct {
				Approvals []struct {
					ApprovalID string `json:"approval_id"`
					ArgsHash   string `json:"args_hash"`
				}
			}
			d.until("the approval", func() bool {
				d.call("GET", "/v1/runs/"+first.RunID+"/approvals", "", &aps)
				return len(aps.Approvals) > 0
			})
			ap := aps.Approvals[0]
			if code, got := d.call("POST", "/v1/runs/"+first.RunID+"/approvals/"+ap.ApprovalID,
				`{"decision":"approve","args_hash":"`+ap.ArgsHash+`"}`, nil); code != http.StatusOK {
				t.Fatalf("approve: %d %s", code, got)
			}
			d.until("the execution to end", func() bool { return d.executionStatus(first.RunID) != "RUNNING" })
			if st := d.executionStatus(first.RunID); st != "SUCCEEDED" {
				t.Fatalf("execution %s", st)
			}

			for i := range 2 {
				var again struct {
					RunID  string `json:"run_id"`
					Status string `json:"status"`
				}
				code, got := d.call("POST", "/v1/runs", body, &again, "Idempotency-Key", "nightly-1")
				if code != http.StatusOK || again.RunID != first.RunID || again.Status != "completed" {
					t.Fatalf("repeat %d: %d %s, want 200 with the completed run %s", i+1, code, got, first.RunID)
				}
			}

			cs := d.mcpSession()
			var v struct {
				RunID   string `json:"run_id"`
				Status  string `json:"status"`
				Created bool   `json:"created"`
			}
			text, failed := d.callTool(cs, "start_run",
				map[string]any{"agent": "research", "input": "Durable agents", "idempotency_key": "nightly-1"}, &v)
			if failed || v.RunID != first.RunID || v.Status != "completed" || v.Created {
				t.Fatalf("MCP start_run with the key: %s, want the completed run %s", text, first.RunID)
			}
		})
	}
}
