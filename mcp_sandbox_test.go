package keel_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/keeltest"
)

// probeModel asks the fixture's probe tool once, then keeps what the
// tool answered and ends the turn.
type probeModel struct {
	args   string
	mu     sync.Mutex
	answer string
}

func (m *probeModel) Generate(_ context.Context, req keel.ModelRequest) (keel.ModelResponse, error) {
	for _, msg := range req.Messages {
		for _, r := range msg.ToolResults {
			m.mu.Lock()
			m.answer = r.Content
			m.mu.Unlock()
			return keel.ModelResponse{Text: "probed", StopReason: "end_turn"}, nil
		}
	}
	return keel.ModelResponse{ToolCalls: []keel.ToolCall{{ID: "c1", Name: "fx_probe", Args: []byte(m.args)}}, StopReason: "tool_use"}, nil
}

// TestMCPStdioServerInTheAgentsSandbox: through the public API, an agent
// that runs commands in a sandbox runs its stdio MCP server there: the
// server reads no file of the worker's and none of its environment.
// Unsandboxed, the same server reads both.
func TestMCPStdioServerInTheAgentsSandbox(t *testing.T) {
	testbin.SkipShort(t, "builds the MCP fixture server and runs it in the sandbox")
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed (Debian: apt-get install -y bubblewrap); isolation tests need it")
	}
	fx := keeltest.BuildReachable(t, "./internal/cmd/mcpfixture")
	secret := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(secret, []byte("file-canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KEEL_TEST_CANARY", "env-canary")
	for _, tc := range []struct {
		name        string
		unsandboxed bool
		want        string
	}{
		{"in the sandbox", false, "file:ERR env: "},
		{"unsandboxed", true, "file:file-canary env:env-canary "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &probeModel{args: `{"path":"` + secret + `","env":"KEEL_TEST_CANARY","dial":"127.0.0.1:1"}`}
			agent := keel.Agent{Name: "prober", Instructions: "Probe.", Model: m,
				Workspace: &keel.WorkspaceConfig{Commands: &keel.CommandPolicy{}},
				MCPServers: []keel.MCPServer{{Name: "fx", Command: []string{fx, "-log", "/tmp/applied.jsonl", "-hostile", "probe"},
					Trusted: true, Unsandboxed: tc.unsandboxed}}}
			rt := keeltest.Start(t, agent)
			id := rt.StartRun(t, "prober", "probe")
			rt.WaitFor(t, id, "completed")
			m.mu.Lock()
			defer m.mu.Unlock()
			if !strings.Contains(m.answer, tc.want) {
				t.Errorf("the probe answered %q, want %q", m.answer, tc.want)
			}
		})
	}
}
