package mcpserve_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/keeltest"
)

// session starts `prog mcp` (with flags) as a child process of the Go
// SDK's client, pointed at p's API, as an IDE would.
func session(t *testing.T, bin string, p *keeltest.Program, flags ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, flags...)...)
	cmd.Env = append(os.Environ(), "KEEL_URL="+p.URL, "KEEL_TOKEN="+p.Token)
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), keeltest.HangGuard)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callJSON calls a tool and decodes its JSON answer into out.
func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		t.Fatalf("%s: %s", name, text)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%s: %v: %s", name, err, text)
		}
	}
}

type runView struct {
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	Approvals []struct {
		ApprovalID string `json:"approval_id"`
		Tool       string `json:"tool"`
		ArgsHash   string `json:"args_hash"`
	} `json:"pending_approvals"`
}

func tools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// TestMCPClientFollowsARun: the Go SDK's client, standing in for an IDE,
// runs `prog mcp`, starts a run of the mcpagent program, follows it to
// its approval, reads its explain story and its events. Without
// --allow-decisions it is offered no way to approve; with it, it
// approves, and the run goes on.
func TestMCPClientFollowsARun(t *testing.T) {
	fx := testbin.Build(t, "../cmd/mcpfixture")
	bin := testbin.Build(t, "../mcptool/testdata/mcpagent")
	p := keeltest.StartProgram(t, bin, "MCPAGENT_CMD="+fx, "MCPAGENT_LOG="+filepath.Join(t.TempDir(), "applied.jsonl"))
	cs := session(t, bin, p)
	if got, want := strings.Join(tools(t, cs), " "), "explain_run get_run run_events send_input start_run"; got != want {
		t.Errorf("tools %q, want %q (no decisions by default)", got, want)
	}
	var v runView
	callJSON(t, cs, "start_run", map[string]any{"agent": "mcp", "input": "go", "idempotency_key": "ide-1"}, &v)
	id := v.RunID
	for deadline := time.Now().Add(keeltest.HangGuard); v.Status != "awaiting_approval"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run never asked for approval: %+v", v)
		}
		callJSON(t, cs, "get_run", map[string]any{"run_id": id}, &v)
	}
	if len(v.Approvals) != 1 || v.Approvals[0].Tool != "fx_lookup" {
		t.Fatalf("pending approvals %+v, want fx_lookup's", v.Approvals)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "explain_run", Arguments: map[string]any{"run_id": id}})
	if err != nil || res.IsError {
		t.Fatalf("explain_run: %v %+v", err, res)
	}
	story := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(story, id) || !strings.Contains(story, "waiting for a person to approve the exact fx_lookup call") {
		t.Errorf("the story does not name the run and the tool awaiting approval:\n%s", story)
	}
	var page struct {
		Events []struct{ Type string } `json:"events"`
	}
	callJSON(t, cs, "run_events", map[string]any{"run_id": id}, &page)
	if !slices.ContainsFunc(page.Events, func(e struct{ Type string }) bool { return e.Type == "approval_requested" }) {
		t.Errorf("events %+v, want the log up to approval_requested", page.Events)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "decide_approval", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Error("decide_approval answered without --allow-decisions")
	}

	if slices.Contains(tools(t, cs), "resolve_run") {
		t.Error("resolve_run offered without --allow-decisions")
	}
	admin := session(t, bin, p, "--allow-decisions")
	if offered := tools(t, admin); !slices.Contains(offered, "decide_approval") || !slices.Contains(offered, "resolve_run") {
		t.Fatalf("--allow-decisions offers %v: want decide_approval and resolve_run", offered)
	}
	ap := v.Approvals[0]
	callJSON(t, admin, "decide_approval", map[string]any{"run_id": id, "approval_id": ap.ApprovalID, "decision": "approve", "args_hash": ap.ArgsHash}, nil)
	// The run goes on to its next approval, set_flag's.
	for deadline := time.Now().Add(keeltest.HangGuard); ; time.Sleep(20 * time.Millisecond) {
		aps := p.Approvals(t, id)
		if len(aps) == 2 && aps[0].Status == "approved" && aps[1].Tool == "fx_set_flag" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("approvals after the MCP decision: %+v", aps)
		}
	}
}
