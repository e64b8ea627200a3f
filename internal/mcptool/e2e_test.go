package mcptool_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/keeltest"
)

// binaries are the MCP fixture server and the Keel program using it,
// built once for the package's tests.
func binaries(t *testing.T) (fixture, agent string) {
	t.Helper()
	return testbin.Build(t, "github.com/keelrun/keel/internal/cmd/mcpfixture"), testbin.Build(t, "./testdata/mcpagent")
}

// entry is one line of the fixture's log.
type entry struct {
	Tool      string `json:"tool"`
	Operation string `json:"operation_id"`
	Kind      string `json:"kind"`
}

func readLog(t *testing.T, path string) []entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("fixture log: %v", err)
		}
		out = append(out, e)
	}
	return out
}

func countLog(es []entry, tool, kind string) int {
	n := 0
	for _, e := range es {
		if e.Tool == tool && e.Kind == kind {
			n++
		}
	}
	return n
}

// httpFixture starts the fixture on loopback over streamable HTTP, in a
// process that outlives every kill of keel dev, and returns its URL.
func httpFixture(t *testing.T, log string, flags ...string) string {
	t.Helper()
	fx, _ := binaries(t)
	urlFile := filepath.Join(t.TempDir(), "url")
	cmd := exec.Command(fx, append([]string{"-http", "127.0.0.1:0", "-url-file", urlFile, "-log", log}, flags...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(keeltest.HangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(urlFile); err == nil && len(b) > 0 {
			return string(b)
		}
	}
	t.Fatal("mcpfixture did not serve")
	return ""
}

// transports are the two ways the program reaches the fixture: the
// environment of the program for each, given the log path.
func transports(t *testing.T) map[string]func(log string) []string {
	fx, _ := binaries(t)
	return map[string]func(string) []string{
		"stdio": func(log string) []string { return []string{"MCPAGENT_CMD=" + fx, "MCPAGENT_LOG=" + log} },
		"http": func(log string) []string {
			return []string{"MCPAGENT_URL=" + httpFixture(t, log, "-token", canary, "-hostile", "echo"), "MCPAGENT_TOKEN=" + canary, "MCPAGENT_LOG=" + log}
		},
	}
}

// canary is the HTTP fixture's bearer token: it must reach the server and
// nothing Keel records or shows, though the fixture echoes it in lookup's
// answers (-hostile echo).
const canary = "mcp-canary-7f3c9e21b5d84a06"

// TestRunThroughMCP: over stdio and over streamable HTTP, a run of the
// mcpagent program calls the fixture's three tools, each after the
// approval its mode asks for: lookup and delete_record (untrusted
// readOnlyHint: effects a person allows once per session, so the second
// lookup runs at once), set_flag and delete_item (effects, asked per
// call). Each applies once; every call, reads included, carried one of
// Keel's operation ids in _meta.
func TestRunThroughMCP(t *testing.T) {
	_, agent := binaries(t)
	ts := transports(t)
	// OAuth client credentials: the client secret is the canary, and the
	// fixture echoes the access token it issued into lookup's answers.
	ts["oauth"] = func(log string) []string {
		return []string{"MCPAGENT_URL=" + httpFixture(t, log, "-oauth", "keel-client:"+canary, "-hostile", "echo"),
			"MCPAGENT_OAUTH=keel-client:" + canary, "MCPAGENT_LOG=" + log}
	}
	for name, env := range ts {
		t.Run(name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "applied.jsonl")
			p := keeltest.StartProgram(t, agent, env(log)...)
			id := p.StartRun(t, "mcp", "go")
			var modes []string
			for range 4 {
				ap := p.WaitApproval(t, id)
				modes = append(modes, ap.Tool+":"+ap.Mode)
				p.Approve(t, id, ap)
			}
			p.WaitFor(t, id, "completed")
			if want := "fx_lookup:confirm_once fx_set_flag:mutating fx_delete_item:mutating fx_delete_record:confirm_once"; strings.Join(modes, " ") != want {
				t.Errorf("approvals %v, want %s", modes, want)
			}
			es := readLog(t, log)
			if countLog(es, "lookup", "read") != 2 || countLog(es, "set_flag", "applied") != 1 || countLog(es, "delete_item", "applied") != 1 ||
				countLog(es, "delete_record", "applied") != 1 {
				t.Errorf("fixture log %+v: want 2 reads, set_flag, delete_item and delete_record applied once", es)
			}
			ops := map[string]bool{}
			for _, e := range p.Events(t, id) {
				if e.Type == "op_intent" {
					ops[e.OperationID] = true
				}
			}
			for _, e := range es {
				if (e.Kind == "applied" || e.Kind == "read") && !ops[e.Operation] {
					t.Errorf("the fixture applied %s with operation id %q, not one of Keel's %v", e.Tool, e.Operation, ops)
				}
			}
			if name == "http" || name == "oauth" {
				assertNoCanary(t, p, id)
			}
		})
	}
}
