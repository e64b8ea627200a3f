package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/model/anthropic"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/modeltest"
)

var wire = modeltest.Wire{
	ContentType:     "text/event-stream",
	RequestIDHeader: "request-id",
	Frames:          modeltest.SSEFrames("testdata"),
}

func newProvider(t *testing.T, url, key string) model.Streamer {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: key, BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Provider{
		Name:       anthropic.Name,
		Wire:       wire,
		New:        newProvider,
		ToolCallID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
		ErrorBody: func(status int, msg string) (string, map[string]string) {
			typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 500: "api_error"}[status]
			b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
			return string(b), nil
		},
		SecretSent: func(r modeltest.Request, key string) bool {
			return r.Header.Get("X-Api-Key") == key || r.Header.Get("Authorization") == "Bearer "+key
		},
		RequestPath: "/v1/messages",
		// Request1 in the wire form: system prompt, the tool call and its
		// result, the tool's schema.
		RequestBody: `{
			"model": "claude-sonnet-4-5",
			"max_tokens": 1024,
			"stream": true,
			"system": [{"type": "text", "text": "You are a research agent."}],
			"messages": [
				{"role": "user", "content": [{"type": "text", "text": "Find recent work on durable agents."}]},
				{"role": "assistant", "content": [
					{"type": "text", "text": "Searching."},
					{"type": "tool_use", "id": "call_0", "name": "web_search", "input": {"query": "agents"}}
				]},
				{"role": "user", "content": [
					{"type": "tool_result", "tool_use_id": "call_0", "content": [{"type": "text", "text": "3 results"}], "is_error": false}
				]}
			],
			"tools": [{
				"name": "web_search",
				"description": "Search the web.",
				"input_schema": {"type": "object", "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}}, "required": ["query"]}
			}]
		}`,
	})
}

// An overloaded_error event inside a 200 stream is a server error: retried.
func TestInStreamOverloadedIsRetried(t *testing.T) {
	srv := modeltest.NewServer(t, wire,
		modeltest.Reply{Fixture: "overloaded"},
		modeltest.Reply{Fixture: "text"})
	m := model.NewTransport(newProvider(t, srv.URL, "sk-ant-test-key-123456"), model.TransportOptions{
		Provider: anthropic.Name,
		Sleep:    func(context.Context, time.Duration) error { return nil },
	})
	resp, err := m.Generate(context.Background(), modeltest.Request1())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Attempts) != 1 || resp.Attempts[0].Kind != model.AttemptServerError || resp.Attempts[0].Status != 529 {
		t.Fatalf("attempts = %+v, want one server_error 529", resp.Attempts)
	}
	if resp.Text != "Hello from Keel." {
		t.Fatalf("text = %q", resp.Text)
	}
}

// BenchmarkGenerate is one streamed tool call through the client, over a local
// HTTP server: the floor of a real call's cost in this process.
func BenchmarkGenerate(b *testing.B) {
	replies := make([]modeltest.Reply, b.N)
	for i := range replies {
		replies[i] = modeltest.Reply{Fixture: "tool_fragments"}
	}
	srv := modeltest.NewServer(b, wire, replies...)
	p, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-bench-0123456789", BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	m := model.NewTransport(p, model.TransportOptions{Provider: anthropic.Name})
	req := modeltest.Request1()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := m.Generate(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
