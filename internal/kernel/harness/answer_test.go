package harness

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/model"
)

// TestAnswerCalls: model_call_completed records each call's arguments, and
// where a string equals a field of an earlier tool's latest result, the
// same arguments with a reference to it (what keel record replays).
func TestAnswerCalls(t *testing.T) {
	transcript := []model.Message{
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "draft_report"}}},
		{Role: model.RoleUser, ToolResults: []model.ToolResult{{CallID: "c1", Content: `{"artifact_key":"runs/r1/report.md","sha256":"abcdef0123","bytes":3,"status":"open"}`}}},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c2", Name: "search"}}},
		{Role: model.RoleUser, ToolResults: []model.ToolResult{{CallID: "c2", Content: "not JSON"}}},
	}
	cases := []struct {
		name, args, replay string
	}{
		{"values from a result become references, short ones stay", `{"artifact_key":"runs/r1/report.md","sha256":"abcdef0123","status":"open"}`,
			`{"artifact_key":"{{draft_report.artifact_key}}","sha256":"{{draft_report.sha256}}","status":"open"}`},
		{"nested values too", `{"refs":["abcdef0123","x"]}`, `{"refs":["{{draft_report.sha256}}","x"]}`},
		{"nothing from a result", `{"title":"Durable agents","bytes":3}`, ""},
		{"arguments that are not JSON", `{"title":`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := answerCalls([]model.ToolCall{{ID: "c3", Name: "publish", Args: json.RawMessage(tc.args)}}, transcript)
			if len(got) != 1 || got[0].Name != "publish" || !json.Valid(got[0].Args) {
				t.Fatalf("recorded %+v", got)
			}
			if string(got[0].ReplayArgs) != tc.replay {
				t.Errorf("replay args %s, want %s", got[0].ReplayArgs, tc.replay)
			}
		})
	}
}

// TestRecordAnswerBounded: an answer too large for an event is left out
// (it stays in the checkpoint) and says so.
func TestRecordAnswerBounded(t *testing.T) {
	small := recordAnswer(model.Response{Text: "ok"}, nil)
	if small.Text != "ok" || small.OmittedBytes != 0 {
		t.Fatalf("small answer recorded as %+v", small)
	}
	big := recordAnswer(model.Response{Text: strings.Repeat("x", maxRecordedAnswer)}, nil)
	if big.Text != "" || big.OmittedBytes <= maxRecordedAnswer {
		t.Fatalf("large answer recorded as text of %d bytes, omitted %d", len(big.Text), big.OmittedBytes)
	}
}
