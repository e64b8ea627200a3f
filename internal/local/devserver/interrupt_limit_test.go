package devserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// TestInterruptInputWhilePausedAtALimit is issue #40 item 3: under the
// interrupt policy, input to a run paused at a limit (its keel.raise_limit
// approval pending) used to deny the raise, so the run failed as stopped
// by a person and the input was never read. Now the pause stays for its
// person, input sent through the API and through MCP send_input is
// queued, and after the raise the run reads both and completes.
func TestInterruptInputWhilePausedAtALimit(t *testing.T) {
	for _, be := range backends {
		t.Run(string(be), func(t *testing.T) {
			ctx := context.Background()
			d := devOn(t, be, func(app *compose.App) {
				app.Agents[0].OnLimit = harness.LimitPolicy{Pause: true, RaiseBy: run.Limits{MaxToolCalls: 100}}
			})
			var created struct {
				RunID string `json:"run_id"`
			}
			// One tool call allowed: the second (analyze_documents) pauses.
			if code, got := d.call("POST", "/v1/runs", `{"agent":"research","input":"Durable agents","input_policy":"interrupt",`+
				`"limits":{"max_tool_calls":1}}`, &created); code != http.StatusCreated {
				t.Fatalf("create: %d %s", code, got)
			}
			id := created.RunID
			var raise run.Approval
			d.until("the pause at max_tool_calls", func() bool {
				aps, err := d.rt.Store.ListApprovals(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range aps {
					if a.Tool == harness.RaiseLimitTool && a.TaskToken != "" {
						raise = a
						return true
					}
				}
				return false
			})

			if code, got := d.call("POST", "/v1/runs/"+id+"/input", `{"text":"also cover retries"}`, nil); code != http.StatusAccepted {
				t.Fatalf("input: %d %s", code, got)
			}
			text, failed := d.callTool(d.mcpSession(), "send_input", map[string]any{"run_id": id, "text": "and timeouts"}, nil)
			if failed {
				t.Fatalf("MCP send_input: %s", text)
			}
			got, err := d.rt.Store.GetApproval(ctx, id, raise.ID)
			if err != nil {
				t.Fatal(err)
			}
			r, err := d.rt.Store.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != run.ApprovalPending || r.Status != run.StatusAwaitingApproval {
				t.Fatalf("after input: raise %s (%s), run %s (%s); want the pause kept", got.Status, got.Reason, r.Status, r.Error)
			}

			if code, got := d.call("POST", "/v1/runs/"+id+"/limits", `{"decision":"raise","limit":"max_tool_calls"}`, nil); code != http.StatusOK {
				t.Fatalf("raise: %d %s", code, got)
			}
			// On to the publish approval, and to the end.
			d.until("the run to complete", func() bool {
				r, err := d.rt.Store.GetRun(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status.Terminal() {
					if r.Status != run.StatusCompleted {
						t.Fatalf("run ended %s: %s", r.Status, r.Error)
					}
					return true
				}
				aps, err := d.rt.Store.ListApprovals(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range aps {
					if a.Status == run.ApprovalPending && a.Tool != harness.RaiseLimitTool && a.TaskToken != "" {
						if code, got := d.call("POST", "/v1/runs/"+id+"/approvals/"+a.ID,
							`{"decision":"approve","args_hash":"`+a.ArgsHash+`"}`, nil); code != http.StatusOK {
							t.Fatalf("approve %s: %d %s", a.Tool, code, got)
						}
					}
				}
				return false
			})
			ins, err := d.rt.Store.ListInputs(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, in := range ins {
				if !in.Consumed {
					t.Errorf("input %q never read", in.Text)
				}
				texts = append(texts, in.Text)
			}
			if !slices.Equal(texts, []string{"also cover retries", "and timeouts"}) {
				t.Errorf("inputs %q, want both, in order", texts)
			}
			evs, err := d.rt.Store.ReadEvents(ctx, id, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var taken []string
			raised := 0
			for _, e := range evs {
				if e.Type == run.EventBudgetRaised {
					raised++
					if !strings.Contains(string(e.Data), `"to":101`) {
						t.Errorf("budget_raised %s, want max_tool_calls raised to 101", e.Data)
					}
				}
				if e.Type != run.EventTurnStarted {
					continue
				}
				var data struct{ Inputs []string }
				if err := json.Unmarshal(e.Data, &data); err != nil {
					t.Fatal(err)
				}
				taken = append(taken, data.Inputs...)
			}
			if raised != 1 {
				t.Errorf("%d budget_raised events, want 1", raised)
			}
			if len(taken) != len(ins) {
				t.Errorf("turns started from %d inputs, want %d", len(taken), len(ins))
			}
		})
	}
}
