package harness

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/model"
)

// The incremental view must equal the whole-transcript functions it
// replaces after every append, whatever the shape of the transcript.
func TestTranscriptViewMatchesWholeTranscript(t *testing.T) {
	call := func(id, name, args string) model.Message {
		return model.Message{Role: model.RoleAssistant, Text: "t", ToolCalls: []model.ToolCall{{ID: id, Name: name, Args: json.RawMessage(args)}}}
	}
	res := func(id, content string, isErr bool) model.Message {
		return model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: id, Content: content, IsError: isErr}}}
	}
	cases := []struct {
		name string
		msgs []model.Message
	}{
		{"empty", nil},
		{"user only", []model.Message{{Role: model.RoleUser, Text: "hello"}}},
		{"consecutive tool messages coalesce", []model.Message{{Role: model.RoleUser, Text: "go"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "search", Args: json.RawMessage(`{}`)}, {ID: "b", Name: "fetch", Args: json.RawMessage(`{}`)}}},
			res("a", `{"key":"artifact/one/1234"}`, false), res("b", `{"url":"https://example.com/x"}`, false),
			call("c", "search", `{"q":"artifact/one/1234"}`), res("c", `{"key":"artifact/two/5678"}`, false)}},
		{"an error does not shadow a success", []model.Message{{Role: model.RoleUser, Text: "go"},
			call("a", "search", `{}`), res("a", `{"key":"artifact/one/1234"}`, false),
			call("b", "search", `{}`), res("b", `{"key":"artifact/bad/0000"}`, true)}},
		{"non-JSON latest result hides the older one", []model.Message{{Role: model.RoleUser, Text: "go"},
			call("a", "search", `{}`), res("a", `{"key":"artifact/one/1234"}`, false),
			call("b", "search", `{}`), res("b", `plain text`, false)}},
		{"same value in two tools: the latest wins", []model.Message{{Role: model.RoleUser, Text: "go"},
			call("a", "search", `{}`), res("a", `{"key":"shared-value-1"}`, false),
			call("b", "fetch", `{}`), res("b", `{"id":"shared-value-1"}`, false),
			{Role: model.RoleUser, Text: "more"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v transcriptView
			for n := 0; n <= len(tc.msgs); n++ {
				msgs := tc.msgs[:n]
				want := coalesce(msgs)
				if got := v.request(msgs); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("after %d: request %+v, want %+v", n, got, want)
				}
				req := model.Request{System: "sys", Messages: want, MaxTokens: 100}
				if got, want := v.estimate("sys", 100), estimateTokens(req); got != want {
					t.Fatalf("after %d: estimate %d, want %d", n, got, want)
				}
				if got, want := v.refs(msgs), resultFields(msgs); !reflect.DeepEqual(got, want) {
					t.Fatalf("after %d: refs %v, want %v", n, got, want)
				}
			}
		})
	}
}

// A request already handed to a model never changes under it when later
// tool results coalesce into its last message.
func TestTranscriptViewKeepsSentRequests(t *testing.T) {
	msgs := []model.Message{{Role: model.RoleUser, Text: "go"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "x"}, {ID: "b", Name: "x"}}},
		{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: "a", Content: "1"}}}}
	var v transcriptView
	sent := v.request(msgs)
	msgs = append(msgs, model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: "b", Content: "2"}}})
	now := v.request(msgs)
	if n := len(sent[2].ToolResults); n != 1 {
		t.Fatalf("the sent request's last message now has %d results", n)
	}
	if n := len(now[2].ToolResults); n != 2 {
		t.Fatalf("the new request's last message has %d results, want 2", n)
	}
}
