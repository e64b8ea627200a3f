package modeltest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// suiteCase is one case of Run: the replies the server gives, in order,
// and what the call through the transport must have returned.
type suiteCase struct {
	name        string
	replies     []Reply
	maxAttempts int // 0 means 3
	check       check
}

type check func(t *testing.T, resp model.Response, err error, srv *Server, slept []time.Duration)

// suiteCases are Run's cases, by what they exercise.
func suiteCases(p Provider) []suiteCase {
	var cases []suiteCase
	cases = append(cases, streamCases(p)...)
	cases = append(cases, statusCases(p)...)
	return append(cases, secretCases(p)...)
}

// errReply is p's error answer with status and message, with a
// Retry-After header when retryAfter is set.
func errReply(p Provider, status int, retryAfter string, msg string) Reply {
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

// streamCases read streams whole, in fragments, cut or stalled.
func streamCases(p Provider) []suiteCase {
	return []suiteCase{
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
	}
}

// statusCases answer with error statuses and malformed events: which are
// retried, after how long, and what the error says.
func statusCases(p Provider) []suiteCase {
	return []suiteCase{
		{
			name:    "429 honours retry-after",
			replies: []Reply{errReply(p, 429, "7", "Too many requests"), {Fixture: "text"}},
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
			replies: []Reply{errReply(p, 429, "120", "Too many requests")},
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
			replies: []Reply{errReply(p, 500, "", "Internal server error"), {Fixture: "text"}},
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
			replies: []Reply{errReply(p, 400, "", "max_tokens: must be positive"), {Fixture: "text"}},
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
	}
}

// secretCases check that the credential never leaks into an error or a
// response.
func secretCases(p Provider) []suiteCase {
	return []suiteCase{
		{
			name:    "the credential never appears in an error",
			replies: []Reply{errReply(p, 401, "", "invalid x-api-key "+secret+" for "+secret[:12])},
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
				r := errReply(p, 400, "", "bad request")
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
}
