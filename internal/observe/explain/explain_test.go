package explain_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// TestStories explains a run of each kind, recorded now by the real
// harness and as stored in testdata (records of an older Keel must still
// explain), and checks the facts of each story, not its whole text.
func TestStories(t *testing.T) {
	type check func(t *testing.T, s explain.Story)
	has := func(want ...string) check {
		return func(t *testing.T, s explain.Story) {
			for _, w := range want {
				if !strings.Contains(s.Text, w) {
					t.Errorf("the story lacks %q:\n%s", w, s.Text)
				}
			}
		}
	}
	cases := []struct {
		kind   string
		status run.Status
		checks []check
	}{
		{"completed", run.StatusCompleted, []check{has("the model asked for search", "run completed", "keel artifacts "),
			func(t *testing.T, s explain.Story) {
				if s.FirstErr != nil || len(s.Spend.Repeats) != 0 || len(s.Open) != 0 || s.Spend.Tokens != 830 {
					t.Errorf("error %+v, repeats %+v, open %+v, tokens %d", s.FirstErr, s.Spend.Repeats, s.Open, s.Spend.Tokens)
				}
			}}},
		{"budget_exceeded", run.StatusFailed, []check{has("budget exceeded: max_tool_calls (4)", "73 % of tokens went to 3 repeated calls of run_tests",
			"after tool_failed run_tests", "keel fork "),
			func(t *testing.T, s explain.Story) {
				if s.FirstErr == nil || s.FirstErr.Kind != "tool_failed" || !strings.Contains(s.FirstErr.Message, "npm install failed") {
					t.Errorf("first error %+v", s.FirstErr)
				}
				if len(s.Spend.Repeats) != 1 || s.Spend.Repeats[0].Calls != 3 || s.Spend.Repeats[0].Failed != 3 {
					t.Errorf("repeats %+v", s.Spend.Repeats)
				}
				if last := s.FirstErr.Followed[len(s.FirstErr.Followed)-1]; !strings.Contains(last, "budget exceeded") {
					t.Errorf("what followed the first error: %q", s.FirstErr.Followed)
				}
			}}},
		{"tool_failing", run.StatusCompleted, []check{has("run_tests failed: exit status 1", "(×3)", "79 % of tokens went to 3 repeated calls of run_tests"),
			func(t *testing.T, s explain.Story) {
				if s.Spend.ByTool[0].Tool != "run_tests" || s.Spend.ByTool[0].Failed != 3 || s.Spend.ToolTime < 9e9 {
					t.Errorf("by tool %+v, tool time %s", s.Spend.ByTool, s.Spend.ToolTime)
				}
			}}},
		{"needs_human", run.StatusNeedsHuman, []check{has("approved by bob", "effect needs a person", "keel fork "),
			func(t *testing.T, s explain.Story) {
				if len(s.Open) != 1 || s.Open[0].Kind != "operation" || !strings.Contains(s.Open[0].Why, "idempotency key op_") ||
					!strings.Contains(s.Open[0].Why, "destination blog") {
					t.Errorf("open %+v", s.Open)
				}
				if s.FirstErr == nil || s.FirstErr.Kind != "op_needs_human" || s.FirstErr.Tool != "publish" {
					t.Errorf("first error %+v", s.FirstErr)
				}
			}}},
		{"rate_limited", run.StatusRunning, []check{has("rate limited: durable wait of 90s", "resumes by itself"),
			func(t *testing.T, s explain.Story) {
				if len(s.Open) != 1 || s.Open[0].Kind != "wait" || s.FirstErr != nil {
					t.Errorf("open %+v, first error %+v", s.Open, s.FirstErr)
				}
			}}},
		{"cancelled", run.StatusCancelled, []check{has("cancel requested by carol", "run cancelled", "keel fork "),
			func(t *testing.T, s explain.Story) {
				// The cancel came while long_build ran: the path follows time, not commit order.
				var order []string
				for _, d := range s.Path {
					order = append(order, d.What)
				}
				if len(order) != 3 || order[0] != "the model asked for long_build" || order[1] != "cancel requested by carol" {
					t.Errorf("path %q", order)
				}
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			fresh, stored := recorded(t, tc.kind)
			for name, b := range map[string]telemetry.Bundle{"fresh": fresh, "stored": stored} {
				s := explain.Of(b)
				if s.Status != tc.status {
					t.Fatalf("%s: status %s, want %s", name, s.Status, tc.status)
				}
				for _, c := range tc.checks {
					c(t, s)
				}
				if !strings.Contains(s.Text, "keel bundle "+s.RunID) {
					t.Errorf("%s: no bundle command in\n%s", name, s.Text)
				}
				// The JSON the API returns carries the same story.
				var back explain.Story
				data, err := json.Marshal(s)
				if err != nil || json.Unmarshal(data, &back) != nil || back.Text != s.Text || len(back.Path) != len(s.Path) {
					t.Errorf("%s: JSON round trip: %v", name, err)
				}
			}
		})
	}
}
