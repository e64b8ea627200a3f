package mcpserve_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/keeltest"
)

// mcpRequestLine matches dev's request log line of a request at /v1/mcp
// answered status.
func mcpRequestLine(status int) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^.*request.*path=/v1/mcp status=` + strconv.Itoa(status) + `\b.*$`)
}

// bearer adds the API's bearer token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects the Go SDK's client to the API's MCP endpoint
// with token, as an IDE configured with Keel's URL would.
func httpSession(t *testing.T, p *keeltest.Program, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), keeltest.HangGuard)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL + "/v1/mcp",
		HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func startMCPAgent(t *testing.T, env ...string) *keeltest.Program {
	t.Helper()
	fx := testbin.Build(t, "../cmd/mcpfixture")
	bin := testbin.Build(t, "../mcptool/testdata/mcpagent")
	return keeltest.StartProgram(t, bin, append([]string{"MCPAGENT_CMD=" + fx,
		"MCPAGENT_LOG=" + filepath.Join(t.TempDir(), "applied.jsonl")}, env...)...)
}

// TestMCPOverHTTP: an MCP client reaches keel dev's API at /v1/mcp with
// the API's token, starts a run, follows it to its approval and reads its
// story; without the token it gets the API's 401; decisions are offered
// only under KEEL_MCP=decisions, and KEEL_MCP=off leaves no endpoint.
func TestMCPOverHTTP(t *testing.T) {
	p := startMCPAgent(t)
	for _, tok := range []string{"", "not-the-token"} {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"code":"unauthorized"`) {
			t.Errorf("token %q: %d %s, want 401 with the API's error body", tok, resp.StatusCode, body)
		}
	}
	// The failed logins are in the request log, as the API's own are. A
	// line is written once its answer is sent, so it may trail the
	// answer a little: the wait is a hang guard, not a timing assertion.
	n := 0
	for deadline := time.Now().Add(10 * time.Second); n < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n = len(mcpRequestLine(401).FindAllString(p.Output(), -1))
	}
	if n != 2 {
		t.Errorf("%d request log lines of a 401 at /v1/mcp, want 2:\n%s", n, p.Output())
	}

	// Refusals are the API's JSON errors, not the SDK's plain text.
	for _, tc := range []struct {
		method, body, code string
		status             int
	}{
		{http.MethodPost, "not json", "malformed_json", http.StatusBadRequest},
		{http.MethodGet, "", "method_not_allowed", http.StatusMethodNotAllowed},
		{http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`, "body_too_large", http.StatusRequestEntityTooLarge},
	} {
		req, _ := http.NewRequest(tc.method, p.URL+"/v1/mcp", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+p.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
			t.Errorf("%s %.20q: %d %s, want %d with code %s", tc.method, tc.body, resp.StatusCode, body, tc.status, tc.code)
		}
	}

	cs := httpSession(t, p, p.Token)
	if got, want := strings.Join(tools(t, cs), " "), "explain_run get_run run_events send_input start_run"; got != want {
		t.Errorf("tools %q, want %q (no decisions by default)", got, want)
	}
	var v runView
	callJSON(t, cs, "start_run", map[string]any{"agent": "mcp", "input": "go", "idempotency_key": "ide-http-1"}, &v)
	id := v.RunID
	var again runView
	callJSON(t, cs, "start_run", map[string]any{"agent": "mcp", "input": "go", "idempotency_key": "ide-http-1"}, &again)
	if again.RunID != id {
		t.Errorf("the same idempotency key started %s, then %s", id, again.RunID)
	}
	for deadline := time.Now().Add(keeltest.HangGuard); v.Status != "awaiting_approval"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run never asked for approval: %+v", v)
		}
		callJSON(t, cs, "get_run", map[string]any{"run_id": id}, &v)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "explain_run", Arguments: map[string]any{"run_id": id}})
	if err != nil || res.IsError {
		t.Fatalf("explain_run: %v %+v", err, res)
	}
	if story := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(story, "waiting for a person to approve the exact fx_lookup call") {
		t.Errorf("the story does not name the tool awaiting approval:\n%s", story)
	}
	if p.Run(t, id).Status != "awaiting_approval" {
		t.Errorf("the API does not see the run the MCP client started")
	}

	t.Run("decisions", func(t *testing.T) {
		p := startMCPAgent(t, "KEEL_MCP=decisions")
		cs := httpSession(t, p, p.Token)
		if !slices.Contains(tools(t, cs), "decide_approval") {
			t.Fatal("KEEL_MCP=decisions offers no decide_approval")
		}
	})
	t.Run("off", func(t *testing.T) {
		p := startMCPAgent(t, "KEEL_MCP=off")
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/mcp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+p.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("KEEL_MCP=off: /v1/mcp answered %d, want 404", resp.StatusCode)
		}
	})
}
