package mcptool_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/mcptool"
	"github.com/keelrun/keel/internal/runspace"
	"github.com/keelrun/keel/internal/sandbox"
	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/keeltest"
)

// TestStdioServerInTheSandbox: a stdio server of an agent that runs
// commands in a sandbox runs in it. It cannot read a file of the
// worker's, nor the worker's environment (a canary credential), nor reach
// a loopback server, while Env reaches it; with Network it reaches the
// server; run as a plain child (no Isolate), the same probe reads all
// three, so the test fails when the isolation is switched off.
func TestStdioServerInTheSandbox(t *testing.T) {
	testbin.SkipShort(t, "builds the MCP fixture server and runs it in the sandbox")
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed (Debian: apt-get install -y bubblewrap); isolation tests need it")
	}
	sb, err := sandbox.New(context.Background(), sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fx := keeltest.BuildReachable(t, "../cmd/mcpfixture")
	secret := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(secret, []byte("file-canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KEEL_TEST_CANARY", "env-canary")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	args := `{"path":"` + secret + `","env":"KEEL_TEST_CANARY","dial":"` + ln.Addr().String() + `"}`
	for _, tc := range []struct {
		name string
		s    mcptool.Server
		want string
	}{
		{"sandboxed", mcptool.Server{Sandboxed: true, Isolate: sb.ServerCommand}, "file:ERR env: dial:ERR"},
		{"sandboxed, Env given", mcptool.Server{Sandboxed: true, Isolate: sb.ServerCommand, Env: []string{"KEEL_TEST_CANARY=given"}}, "file:ERR env:given dial:ERR"},
		{"sandboxed with Network", mcptool.Server{Sandboxed: true, Network: true, Isolate: sb.ServerCommand}, "file:ERR env: dial:ok"},
		{"a plain child", mcptool.Server{}, "file:file-canary env:env-canary dial:ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arts, err := fs.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			s := tc.s
			s.Name, s.Trusted = "fx", true
			s.Command = []string{fx, "-log", "/tmp/applied.jsonl", "-hostile", "probe"}
			ts, err := mcptool.Open(context.Background(), s, arts)
			if err != nil {
				t.Fatal(err)
			}
			var probe tool.Tool
			for _, x := range ts {
				if x.Info().Name == "fx_probe" {
					probe = x
				}
			}
			if probe == nil {
				t.Fatal("no fx_probe tool")
			}
			res, err := probe.Run(context.Background(), call("run_probe", args))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content + string(res.Data); !strings.Contains(got, tc.want) {
				t.Errorf("probe answered %s, want %q", got, tc.want)
			}
		})
	}
	t.Run("a server per run, in its workspace", func(t *testing.T) {
		arts, err := fs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		root, err := os.MkdirTemp("", "keel-mcp-runs-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root) })
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		m, err := runspace.New(runspace.Config{Root: root, Artifacts: arts, Sandbox: sb})
		if err != nil {
			t.Fatal(err)
		}
		ts, err := mcptool.Open(context.Background(), mcptool.Server{Name: "fx", Trusted: true, Sandboxed: true, Isolate: sb.ServerCommand,
			Command: []string{fx, "-log", "/tmp/applied.jsonl", "-hostile", "probe"}}, arts)
		if err != nil {
			t.Fatal(err)
		}
		var probe tool.Tool
		for _, x := range ts {
			if x.Info().Name == "fx_probe" {
				probe = x
			}
		}
		trees := map[string]*runspace.Tree{}
		for _, run := range []string{"run_a", "run_b"} {
			tr, err := m.Open(context.Background(), run, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tr.Dir(), "mine"), []byte("of "+run), 0o644); err != nil {
				t.Fatal(err)
			}
			trees[run] = tr
		}
		for run, tr := range trees {
			other := trees["run_a"]
			if run == "run_a" {
				other = trees["run_b"]
			}
			for path, want := range map[string]string{"/workspace/mine": "file:of " + run + " ", filepath.Join(other.Dir(), "mine"): "file:ERR "} {
				res, err := probe.Run(tr.Bind(context.Background()), call(run, `{"path":"`+path+`","env":"HOME","dial":"127.0.0.1:1"}`))
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Content + string(res.Data); !strings.Contains(got, want) {
					t.Errorf("%s reading %s: %s, want %q", run, path, got, want)
				}
			}
		}
	})
	t.Run("no sandbox on this worker", func(t *testing.T) {
		_, err := mcptool.Open(context.Background(), mcptool.Server{Name: "fx", Sandboxed: true,
			Command: []string{fx, "-log", "/tmp/applied.jsonl"}}, nil)
		if err == nil || !strings.Contains(err.Error(), "runs in the agent's sandbox, and this worker has none") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("Dir in the sandbox", func(t *testing.T) {
		err := mcptool.Server{Name: "fx", Sandboxed: true, Command: []string{fx}, Dir: "/srv"}.Check()
		if err == nil || !strings.Contains(err.Error(), "Dir") {
			t.Fatalf("err %v", err)
		}
	})
}
