package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/model/openai"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/modeltest"
)

var wire = modeltest.Wire{
	ContentType:     "text/event-stream",
	RequestIDHeader: "x-request-id",
	Frames:          modeltest.SSEFrames("testdata"),
}

func newProvider(t *testing.T, url, key string) model.Streamer {
	t.Helper()
	p, err := openai.New(openai.Config{Model: "gpt-4.1", APIKey: key, BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Provider{
		Name:       openai.Name,
		Wire:       wire,
		New:        newProvider,
		ToolCallID: "call_Qm7kXw3vJ9pL2sRt8nYb4cHd",
		ErrorBody: func(status int, msg string) (string, map[string]string) {
			typ := map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 429: "requests", 500: "server_error"}[status]
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
			return string(b), nil
		},
		SecretSent: func(r modeltest.Request, key string) bool {
			return r.Header.Get("Authorization") == "Bearer "+key
		},
		RequestPath: "/chat/completions",
		// Request1 in the wire form: system prompt, the tool call and its
		// result, the tool's schema.
		RequestBody: `{
			"model": "gpt-4.1",
			"max_completion_tokens": 1024,
			"stream": true,
			"stream_options": {"include_usage": true},
			"messages": [
				{"role": "system", "content": "You are a research agent."},
				{"role": "user", "content": "Find recent work on durable agents."},
				{"role": "assistant", "content": "Searching.", "tool_calls": [
					{"id": "call_0", "type": "function", "function": {"name": "web_search", "arguments": "{\"query\":\"agents\"}"}}
				]},
				{"role": "tool", "tool_call_id": "call_0", "content": "3 results"}
			],
			"tools": [{"type": "function", "function": {
				"name": "web_search",
				"description": "Search the web.",
				"parameters": {"type": "object", "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}}, "required": ["query"]}
			}}]
		}`,
	})
}

// A stream that ends cleanly after finish_reason but before the usage
// chunk is incomplete: include_usage promises one more chunk.
func TestEndBeforeUsageIsIncomplete(t *testing.T) {
	srv := modeltest.NewServer(t, wire, modeltest.Reply{Fixture: "text", Frames: 4})
	m := model.NewTransport(newProvider(t, srv.URL, "sk-test-0123456789"), model.TransportOptions{Provider: openai.Name, MaxAttempts: 1})
	resp, err := m.Generate(context.Background(), modeltest.Request1())
	var ce *model.CallError
	if !errors.As(err, &ce) || len(ce.Attempts) != 1 || ce.Attempts[0].Kind != model.AttemptStreamCut {
		t.Fatalf("Generate = %+v, %v; want one stream_cut", resp, err)
	}
}

// An error object inside a 200 stream is a StatusError: a rate limit (by
// its code) is a 429, retried like one.
func TestInStreamErrorObject(t *testing.T) {
	srv := modeltest.NewServer(t, wire, modeltest.Reply{Fixture: "in_stream_error"}, modeltest.Reply{Fixture: "text"})
	m := model.NewTransport(newProvider(t, srv.URL, "sk-test-0123456789"), model.TransportOptions{Provider: openai.Name,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	resp, err := m.Generate(context.Background(), modeltest.Request1())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Attempts) != 1 || resp.Attempts[0].Kind != model.AttemptRateLimited || resp.Attempts[0].Status != 429 {
		t.Fatalf("attempts = %+v, want one rate_limited 429", resp.Attempts)
	}
}
