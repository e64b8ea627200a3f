package modeltest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// Provider describes the provider under test to Run.
//
// Its testdata must hold four fixtures that all providers record for the
// same exchange, so that the suite can hold them to one expected result:
//
//	text            "Hello from Keel.", end_turn; usage: 25 input (uncached),
//	                10 cache read, 6 output
//	tool_fragments  "Let me search." then a call of web_search whose
//	                arguments {"query":"durable agents","max_results":5}
//	                arrive in many fragments; tool_use; usage 40 in, 30 out
//	cut_tool_args   tool_fragments cut inside the arguments, mid-event
//	malformed       a valid start, then an event whose JSON does not parse
type Provider struct {
	// Name is the provider's name in errors ("anthropic").
	Name string
	Wire Wire
	// New returns the provider pointed at url. secret is its credential
	// (an API key, or the AWS secret access key): the suite checks that it
	// never appears in an error.
	New func(t *testing.T, url, secret string) model.Streamer
	// ToolCallID is the id of the tool call in tool_fragments.
	ToolCallID string
	// ErrorBody returns the provider's error body for an HTTP status, and
	// any header it needs (Bedrock's x-amzn-ErrorType).
	ErrorBody func(status int, message string) (string, map[string]string)
	// SecretSent reports whether a request carried the credential (so the
	// no-leak check is not vacuous).
	SecretSent func(r Request, secret string) bool
	// RequestPath and RequestBody are the request the client sends for
	// Request1: its URL path, and its JSON body in the provider's wire
	// form (compared as JSON values, so order and spacing do not matter).
	RequestPath string
	RequestBody string
}

// The expected results of the fixtures.
var (
	wantText = model.Response{
		Text:       "Hello from Keel.",
		StopReason: model.StopEndTurn,
		Usage:      model.Usage{InputTokens: 25, OutputTokens: 6, CacheReadTokens: 10},
	}
	wantToolArgs = `{"query":"durable agents","max_results":5}`
)

const secret = "sk-keel-TEST-d0n0tl3ak-7f3a9c"

// sleeper records the transport's waits instead of sleeping.
type sleeper struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleeper) Slept() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// Run runs the conformance suite against p. Every case drives p's real
// client against a Server, through model.NewTransport.
func Run(t *testing.T, p Provider) {
	for _, tc := range suiteCases(p) {
		t.Run(tc.name, func(t *testing.T) { runCase(t, p, tc) })
	}
}

// runCase sends Request1 through p's client and model.NewTransport to a
// Server giving tc's replies, and checks the outcome.
func runCase(t *testing.T, p Provider, tc suiteCase) {
	srv := NewServer(t, p.Wire, tc.replies...)
	sl := &sleeper{}
	maxAttempts := tc.maxAttempts
	if maxAttempts == 0 {
		maxAttempts = 3
	}
	m := model.NewTransport(p.New(t, srv.URL, secret), model.TransportOptions{
		Provider:    p.Name,
		Model:       "test-model",
		MaxAttempts: maxAttempts,
		// Tiny, so the stall cases end fast; the test server's
		// replays are local and immediate, so no other case
		// comes near it.
		IdleTimeout: 500 * time.Millisecond,
		Sleep:       sl.Sleep,
		Jitter:      func() float64 { return 0.5 },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := m.Generate(ctx, Request1())
	tc.check(t, resp, err, srv, sl.Slept())
}

// Request1 is the request every case sends: a tool result in the
// transcript, so each provider's request mapping is exercised too.
func Request1() model.Request {
	return model.Request{
		RunID:  "run_1",
		System: "You are a research agent.",
		Messages: []model.Message{
			{Role: model.RoleUser, Text: "Find recent work on durable agents."},
			{Role: model.RoleAssistant, Text: "Searching.", ToolCalls: []model.ToolCall{
				{ID: "call_0", Name: "web_search", Args: json.RawMessage(`{"query":"agents"}`)},
			}},
			{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: "call_0", Content: "3 results"}}},
		},
		Tools: []model.ToolSpec{{
			Name:        "web_search",
			Description: "Search the web.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"integer"}},"required":["query"]}`),
		}},
		MaxTokens: 1024,
	}
}

// mustRequest checks r against p.RequestPath and p.RequestBody.
func mustRequest(t *testing.T, p Provider, r Request) {
	t.Helper()
	if r.Path != p.RequestPath {
		t.Fatalf("path = %s, want %s", r.Path, p.RequestPath)
	}
	var got, want any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatalf("request body: %v", err)
	}
	if err := json.Unmarshal([]byte(p.RequestBody), &want); err != nil {
		t.Fatalf("Provider.RequestBody: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("request body:\n%s", gb)
	}
}

func mustText(t *testing.T, resp model.Response, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Text != wantText.Text || resp.StopReason != wantText.StopReason || resp.Usage != wantText.Usage {
		t.Fatalf("response = %+v\nwant text %q, stop %q, usage %+v", resp, wantText.Text, wantText.StopReason, wantText.Usage)
	}
	if resp.ResponseID == "" || len(resp.ToolCalls) != 0 {
		t.Fatalf("response = %+v, want a response id and no tool call", resp)
	}
}

func mustTool(t *testing.T, p Provider, resp model.Response, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Text != "Let me search." || resp.StopReason != model.StopToolUse || resp.ResponseID == "" {
		t.Fatalf("response = %+v, want text %q, stop tool_use, a response id", resp, "Let me search.")
	}
	if want := (model.Usage{InputTokens: 40, OutputTokens: 30}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if len(resp.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v, want one", resp.ToolCalls)
	}
	tc := resp.ToolCalls[0]
	if tc.ID != p.ToolCallID || tc.Name != "web_search" {
		t.Fatalf("tool call = %+v, want %s web_search", tc, p.ToolCallID)
	}
	var got, want any
	if err := json.Unmarshal(tc.Args, &got); err != nil {
		t.Fatalf("args %q: %v", tc.Args, err)
	}
	_ = json.Unmarshal([]byte(wantToolArgs), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("args = %s, want %s", tc.Args, wantToolArgs)
	}
}

func mustAttempts(t *testing.T, got []model.Attempt, want ...string) {
	t.Helper()
	var kinds []string
	for _, a := range got {
		kinds = append(kinds, a.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("attempts = %+v, want kinds %v", got, want)
	}
}

func mustRequests(t *testing.T, srv *Server, n int) {
	t.Helper()
	if got := len(srv.Requests()); got != n {
		t.Fatalf("server saw %d requests, want %d", got, n)
	}
}
