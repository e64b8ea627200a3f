package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/model"
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
	errReply := func(status int, retryAfter string, msg string) Reply {
		body, hdr := p.ErrorBody(status, msg)
		h := map[string]string{}
		for k, v := range hdr {
			h[k] = v
		}
		if retryAfter != "" {
			h["Retry-After"] = retryAfter
		}
		return Reply{Status: status, Body: body, Header: h}
	}
	type check func(t *testing.T, resp model.Response, err error, srv *Server, slept []time.Duration)

	tests := []struct {
		name        string
		replies     []Reply
		maxAttempts int
		check       check
	}{
		{
			name:    "request shape",
			replies: []Reply{{Fixture: "text"}},
			check: func(t *testing.T, resp model.Response, err error, srv *Server, _ []time.Duration) {
				mustText(t, resp, err)
				mustRequest(t, p, srv.Requests()[0])
			},
		},
		{
			name:    "plain text",
			replies: []Reply{{Fixture: "text"}},
			check: func(t *testing.T, resp model.Response, err error, _ *Server, _ []time.Duration) {
				mustText(t, resp, err)
				if len(resp.Attempts) != 0 {
					t.Errorf("attempts = %+v, want none", resp.Attempts)
				}
			},
		},
		{
			name:    "tool call in many fragments",
			replies: []Reply{{Fixture: "tool_fragments"}},
			check: func(t *testing.T, resp model.Response, err error, _ *Server, _ []time.Duration) {
				mustTool(t, p, resp, err)
			},
		},
		{
			name:    "connection cut mid tool args is retried whole",
			replies: []Reply{{Fixture: "cut_tool_args", Abort: true}, {Fixture: "tool_fragments"}},
			check: func(t *testing.T, resp model.Response, err error, srv *Server, _ []time.Duration) {
				mustTool(t, p, resp, err)
				mustAttempts(t, resp.Attempts, model.AttemptStreamCut)
				mustRequests(t, srv, 2)
			},
		},
		{
			name:    "clean end mid tool args is retried whole",
			replies: []Reply{{Fixture: "cut_tool_args"}, {Fixture: "tool_fragments"}},
			check: func(t *testing.T, resp model.Response, err error, srv *Server, _ []time.Duration) {
				mustTool(t, p, resp, err)
				mustAttempts(t, resp.Attempts, model.AttemptStreamCut)
			},
		},
		{
			name:        "cut mid tool args never surfaces",
			replies:     []Reply{{Fixture: "cut_tool_args", Abort: true}},
			maxAttempts: 1,
			check: func(t *testing.T, resp model.Response, err error, _ *Server, _ []time.Duration) {
				if err == nil {
					t.Fatalf("a cut stream returned %+v", resp)
				}
				if !reflect.DeepEqual(resp, model.Response{}) {
					t.Fatalf("a failed call returned content: %+v", resp)
				}
				var ce *model.CallError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %T %v, want *model.CallError", err, err)
				}
				mustAttempts(t, ce.Attempts, model.AttemptStreamCut)
			},
		},
		{
			name: "stall before headers and mid stream hit the idle timeout",
			replies: []Reply{
				{Stall: true},
				{Fixture: "tool_fragments", Frames: 3, Stall: true},
				{Fixture: "text"},
			},
			check: func(t *testing.T, resp model.Response, err error, srv *Server, _ []time.Duration) {
				mustText(t, resp, err)
				mustAttempts(t, resp.Attempts, model.AttemptStall, model.AttemptStall)
				mustRequests(t, srv, 3)
			},
		},
		{
			name:    "429 honours retry-after",
			replies: []Reply{errReply(429, "7", "Too many requests"), {Fixture: "text"}},
			check: func(t *testing.T, resp model.Response, err error, _ *Server, slept []time.Duration) {
				mustText(t, resp, err)
				mustAttempts(t, resp.Attempts, model.AttemptRateLimited)
				if a := resp.Attempts[0]; a.Status != 429 || a.RetryAfter != 7*time.Second {
					t.Errorf("attempt = %+v, want status 429, retry after 7s", a)
				}
				if fmt.Sprint(slept) != "[7s]" {
					t.Errorf("slept %v, want [7s]", slept)
				}
			},
		},
		{
			name:    "429 with a long retry-after returns a durable wait",
			replies: []Reply{errReply(429, "120", "Too many requests")},
			check: func(t *testing.T, resp model.Response, err error, srv *Server, slept []time.Duration) {
				var rl *model.RateLimitedError
				if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Minute {
					t.Fatalf("err = %v, want RateLimitedError after 2m", err)
				}
				if len(slept) != 0 {
					t.Errorf("slept %v inline", slept)
				}
				mustRequests(t, srv, 1)
			},
		},
		{
			name:    "500 is retried",
			replies: []Reply{errReply(500, "", "Internal server error"), {Fixture: "text"}},
			check: func(t *testing.T, resp model.Response, err error, _ *Server, slept []time.Duration) {
				mustText(t, resp, err)
				mustAttempts(t, resp.Attempts, model.AttemptServerError)
				if resp.Attempts[0].Status != 500 {
					t.Errorf("attempt = %+v, want status 500", resp.Attempts[0])
				}
				if len(slept) != 1 || slept[0] <= 0 {
					t.Errorf("slept %v, want one backoff", slept)
				}
			},
		},
		{
			name:    "400 is not retried and names provider, status and request id",
			replies: []Reply{errReply(400, "", "max_tokens: must be positive"), {Fixture: "text"}},
			check: func(t *testing.T, resp model.Response, err error, srv *Server, _ []time.Duration) {
				var se *model.StatusError
				if !errors.As(err, &se) || se.Status != 400 || se.RequestID != "req_001" || se.Provider != p.Name {
					t.Fatalf("err = %v, want a %s StatusError 400 with request id req_001", err, p.Name)
				}
				for _, s := range []string{p.Name, "400", "req_001", "max_tokens: must be positive"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %q", err, s)
					}
				}
				mustRequests(t, srv, 1)
			},
		},
		{
			name:    "malformed event is retried",
			replies: []Reply{{Fixture: "malformed"}, {Fixture: "text"}},
			check: func(t *testing.T, resp model.Response, err error, _ *Server, _ []time.Duration) {
				mustText(t, resp, err)
				mustAttempts(t, resp.Attempts, model.AttemptMalformed)
			},
		},
		{
			name:    "the credential never appears in an error",
			replies: []Reply{errReply(401, "", "invalid x-api-key "+secret+" for "+secret[:12])},
			check: func(t *testing.T, resp model.Response, err error, srv *Server, _ []time.Duration) {
				if err == nil {
					t.Fatal("a 401 succeeded")
				}
				if !p.SecretSent(srv.Requests()[0], secret) {
					t.Fatal("the request did not carry the credential; the check below would prove nothing")
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
					t.Fatalf("error leaks the credential: %v", err)
				}
			},
		},
		{
			name: "a request id echoing the credential is redacted (error)",
			replies: []Reply{func() Reply {
				r := errReply(400, "", "bad request")
				r.Header = map[string]string{p.Wire.RequestIDHeader: "req-" + secret}
				return r
			}()},
			check: func(t *testing.T, _ model.Response, err error, srv *Server, _ []time.Duration) {
				var se *model.StatusError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want a StatusError", err)
				}
				if strings.Contains(se.RequestID, secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
					t.Fatalf("the request id leaks the credential: %q", se.RequestID)
				}
			},
		},
		{
			name:    "a request id echoing the credential is redacted (stream)",
			replies: []Reply{{Fixture: "text", Header: map[string]string{p.Wire.RequestIDHeader: "req-" + secret}}},
			check: func(t *testing.T, resp model.Response, err error, _ *Server, _ []time.Duration) {
				mustText(t, resp, err)
				if strings.Contains(fmt.Sprintf("%+v", resp), secret) {
					t.Fatalf("the response leaks the credential: %+v", resp)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
		})
	}
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
