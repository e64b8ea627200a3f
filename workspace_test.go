package keel_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/keeltest"
)

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// coder writes a file, runs a command on it in the sandbox and answers.
func coder(script string) keel.Agent {
	return keel.Agent{
		Name:  "coder",
		Model: keel.ScriptedModel([]byte(script)),
		Tools: []keel.Tool{
			keel.ReadOnly("write_file", "write a file of the workspace", func(ctx context.Context, a writeArgs) (string, error) {
				w, err := keel.RunWorkspace(ctx)
				if err != nil {
					return "", err
				}
				return "written", w.WriteFile(a.Path, []byte(a.Content), 0o644)
			}),
			keel.Command("sh", "run a command in the workspace"),
		},
		Workspace: &keel.WorkspaceConfig{Commands: &keel.CommandPolicy{}},
	}
}

const coderScript = `{"turns":[
 {"text":"writing","tool_calls":[{"name":"write_file","args":{"path":"src/a.txt","content":"hello"}}]},
 {"text":"building","tool_calls":[{"name":"sh","args":{"argv":["sh","-c","mkdir -p out && tr a-z A-Z < src/a.txt > out/b.txt && cat out/b.txt"]}}]}
],"final":"built"}`

// wsRoot is a workspace root the sandbox's unprivileged uid can traverse.
func wsRoot(t *testing.T) string {
	d, err := os.MkdirTemp("", "keel-ws-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func startDev(t *testing.T, dataDir, root string, agents ...keel.Agent) *keel.DevServer {
	t.Helper()
	env := map[string]string{"KEEL_WORKSPACE_ROOT": root}
	d, err := keel.Dev(context.Background(), keel.DevOptions{DataDir: dataDir, Getenv: func(k string) string { return env[k] }}, agents...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func clientOf(t *testing.T, d *keel.DevServer) *client.Client {
	t.Helper()
	c, err := client.New(d.URL, d.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitRun polls the run until its status is one of want; another final
// status fails the test.
func waitRun(t *testing.T, c *client.Client, id string, want ...run.Status) api.Run {
	t.Helper()
	deadline := time.Now().Add(keeltest.HangGuard)
	for time.Now().Before(deadline) {
		r, err := c.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(want, r.Status) {
			return r
		}
		if r.Status.Terminal() || r.Status == run.StatusNeedsHuman {
			t.Fatalf("run %s ended %s: %s", id, r.Status, r.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s: no %v within the hang guard", id, want)
	return api.Run{}
}

func startRun(t *testing.T, c *client.Client, agent, input string) string {
	t.Helper()
	r, _, err := c.CreateRun(context.Background(), api.CreateRunRequest{Agent: agent, Input: input}, "")
	if err != nil {
		t.Fatal(err)
	}
	return r.RunID
}

func workspaceVersions(t *testing.T, c *client.Client, id string) []string {
	t.Helper()
	page, err := c.ListCheckpoints(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cp := range page.Checkpoints {
		out = append(out, cp.WorkspaceVersion)
	}
	return out
}

// TestWorkspaceVersionedWithCheckpoints: the tree a run's tools and its
// sandboxed command made is recorded with its checkpoints, and restores
// byte for byte from the artifact store alone, on a directory no worker
// ever used.
func TestWorkspaceVersionedWithCheckpoints(t *testing.T) {
	dataDir := t.TempDir()
	d := startDev(t, dataDir, wsRoot(t), coder(coderScript))
	defer d.Close()
	c := clientOf(t, d)
	id := startRun(t, c, "coder", "build it")
	r := waitRun(t, c, id, run.StatusCompleted)
	if !strings.Contains(r.Output, "built") {
		t.Fatalf("output %q", r.Output)
	}
	cps := workspaceVersions(t, c, id)
	versions := map[string]bool{}
	for _, v := range cps {
		if v != "" {
			versions[v] = true
		}
	}
	// After the write, after the command: two versions at least.
	if len(versions) < 2 {
		t.Fatalf("checkpoints name %d workspace versions, want ≥ 2: %q", len(versions), cps)
	}
	last := cps[len(cps)-1]
	v, err := workspace.ParseVersion(last)
	if err != nil {
		t.Fatal(err)
	}
	arts, err := fs.New(filepath.Join(dataDir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "restored")
	if _, err := workspace.NewVersioner(arts, workspace.Limits{}).Restore(context.Background(), v, dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"src/a.txt": "hello", "out/b.txt": "HELLO"} {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}

type shipArgs struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// shipper is coder with an effect that ships a file of the workspace,
// bound by its hash: Prepare refuses a file whose content is not the one
// approved. shipped records what each dispatch sent.
func shipper(shipped *[]string) keel.Agent {
	a := coder(`{"turns":[
 {"text":"writing","tool_calls":[{"name":"write_file","args":{"path":"src/a.txt","content":"hello"}}]},
 {"text":"building","tool_calls":[{"name":"sh","args":{"argv":["sh","-c","mkdir -p out && tr a-z A-Z < src/a.txt > out/b.txt"]}}]},
 {"text":"shipping","tool_calls":[{"name":"ship","args":{"path":"out/b.txt","sha256":"3733cd977ff8eb18b987357e22ced99f46097f31ecb239e878ae63760e83e4d5"}}]}
],"final":"shipped"}`)
	a.Tools = append(a.Tools, keel.Effect("ship", "ship a file of the workspace", keel.EffectSpec[shipArgs]{
		Prepare: func(ctx context.Context, s shipArgs) (string, error) {
			w, err := keel.RunWorkspace(ctx)
			if err != nil {
				return "", err
			}
			b, err := w.ReadFile(s.Path)
			if err != nil {
				return "", err
			}
			if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != s.SHA256 {
				return "", keel.Reject("%s is %s, not the approved %s", s.Path, got, s.SHA256)
			}
			return s.SHA256, nil
		},
		Dispatch: func(ctx context.Context, opID string, s shipArgs) (keel.Outcome, error) {
			*shipped = append(*shipped, opID+" "+s.SHA256)
			return keel.Outcome{ExternalID: "ship-" + opID}, nil
		},
		Promises: keel.IdempotentByKey,
	}))
	return a
}

// TestWorkspaceRestoredOnAnotherWorker: a run waiting for approval moves to
// a worker that never saw its files (the first one gone, its copies
// deleted); the effect's Prepare reads the file the sandboxed command built,
// restored from the checkpoint, and ships it once.
func TestWorkspaceRestoredOnAnotherWorker(t *testing.T) {
	dataDir, root1 := t.TempDir(), wsRoot(t)
	var shipped []string
	d1 := startDev(t, dataDir, root1, shipper(&shipped))
	c1 := clientOf(t, d1)
	id := startRun(t, c1, "coder", "build and ship")
	waitRun(t, c1, id, run.StatusAwaitingApproval)
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(root1); err != nil {
		t.Fatal(err)
	}
	d2 := startDev(t, dataDir, wsRoot(t), shipper(&shipped))
	defer d2.Close()
	c2 := clientOf(t, d2)
	aps, err := c2.ListApprovals(context.Background(), id)
	if err != nil || len(aps) != 1 {
		t.Fatalf("approvals %+v, %v", aps, err)
	}
	if _, err := c2.Decide(context.Background(), id, aps[0].ApprovalID, api.DecisionRequest{Decision: "approve", ArgsHash: aps[0].ArgsHash}); err != nil {
		t.Fatal(err)
	}
	waitRun(t, c2, id, run.StatusCompleted)
	if len(shipped) != 1 || !strings.HasSuffix(shipped[0], "3733cd977ff8eb18b987357e22ced99f46097f31ecb239e878ae63760e83e4d5") {
		t.Fatalf("shipped %q, want the approved file once", shipped)
	}
}

// TestWorkspaceConfigRefused: Main (through Dev) refuses a workspace it
// could not honour, naming what is wrong, before anything starts.
func TestWorkspaceConfigRefused(t *testing.T) {
	cmd := keel.Command("sh", "run")
	cases := []struct {
		name string
		a    keel.Agent
		want string
	}{
		{"negative limit", keel.Agent{Name: "a", Model: keel.ScriptedModel([]byte(`{"final":"x"}`)), Workspace: &keel.WorkspaceConfig{MaxBytes: -1}}, "must not be negative"},
		{"negative bound", keel.Agent{Name: "a", Model: keel.ScriptedModel([]byte(`{"final":"x"}`)), Workspace: &keel.WorkspaceConfig{Commands: &keel.CommandPolicy{WallTime: -1}}}, "bounds must not be negative"},
		{"allow-list entry not a host", keel.Agent{Name: "a", Model: keel.ScriptedModel([]byte(`{"final":"x"}`)),
			Workspace: &keel.WorkspaceConfig{Commands: &keel.CommandPolicy{AllowHosts: []string{"https://example.com/"}}}}, `AllowHosts entry "https://example.com/"`},
		{"command without workspace", keel.Agent{Name: "a", Model: keel.ScriptedModel([]byte(`{"final":"x"}`)), Tools: []keel.Tool{cmd}}, "set Workspace.Commands"},
		{"command with network", keel.Agent{Name: "a", Model: keel.ScriptedModel([]byte(`{"final":"x"}`)), Tools: []keel.Tool{cmd},
			Workspace: &keel.WorkspaceConfig{Commands: &keel.CommandPolicy{AllowHosts: []string{"example.com"}}}}, "must run from an Effect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keel.Dev(context.Background(), keel.DevOptions{DataDir: t.TempDir()}, tc.a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	_, err := keel.Dev(context.Background(), keel.DevOptions{DataDir: t.TempDir(), Getenv: func(k string) string {
		return map[string]string{"KEEL_SANDBOX": "none"}[k]
	}}, coder(coderScript))
	if err == nil || !strings.Contains(err.Error(), "KEEL_SANDBOX") {
		t.Fatalf("KEEL_SANDBOX=none: %v, want an error naming it", err)
	}
}

// TestWorkspaceWritesAfterACommit: the tree a tool changes is versioned
// even when a commit comes between handing the tool its workspace and its
// code running — the reservation of read-only tools called together in one
// turn, an effect's intent before its Dispatch. The last checkpoint
// restores every file written.
func TestWorkspaceWritesAfterACommit(t *testing.T) {
	together := coder(`{"turns":[
 {"text":"writing","tool_calls":[
  {"name":"write_file","args":{"path":"a.txt","content":"A"}},
  {"name":"write_file","args":{"path":"b.txt","content":"B"}},
  {"name":"write_file","args":{"path":"c/d.txt","content":"D"}}]}
],"final":"written"}`)
	receipt := coder(`{"turns":[
 {"text":"shipping","tool_calls":[{"name":"ship","args":{"path":"a.txt","content":"A"}}]}
],"final":"shipped"}`)
	receipt.Name = "receipt"
	receipt.Tools = append(receipt.Tools, keel.Effect("ship", "ship and keep a receipt in the workspace", keel.EffectSpec[writeArgs]{
		Dispatch: func(ctx context.Context, opID string, a writeArgs) (keel.Outcome, error) {
			w, err := keel.RunWorkspace(ctx)
			if err != nil {
				return keel.Outcome{}, err
			}
			return keel.Outcome{ExternalID: "ship-" + opID}, w.WriteFile(a.Path, []byte(a.Content), 0o644)
		},
		Promises: keel.IdempotentByKey,
	}))
	dataDir := t.TempDir()
	d := startDev(t, dataDir, wsRoot(t), together, receipt)
	defer d.Close()
	c := clientOf(t, d)
	arts, err := fs.New(filepath.Join(dataDir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		agent string
		files map[string]string
	}{
		{"coder", map[string]string{"a.txt": "A", "b.txt": "B", "c/d.txt": "D"}},
		{"receipt", map[string]string{"a.txt": "A"}}, // written by Dispatch, after the intent's commit
	} {
		t.Run(tc.agent, func(t *testing.T) {
			for range 3 { // the read-only calls race each other
				id := startRun(t, c, tc.agent, "go")
				if waitRun(t, c, id, run.StatusCompleted, run.StatusAwaitingApproval).Status == run.StatusAwaitingApproval {
					aps, err := c.ListApprovals(context.Background(), id)
					if err != nil || len(aps) != 1 {
						t.Fatalf("approvals %+v, %v", aps, err)
					}
					if _, err := c.Decide(context.Background(), id, aps[0].ApprovalID, api.DecisionRequest{Decision: "approve", ArgsHash: aps[0].ArgsHash}); err != nil {
						t.Fatal(err)
					}
					waitRun(t, c, id, run.StatusCompleted)
				}
				cps := workspaceVersions(t, c, id)
				v, err := workspace.ParseVersion(cps[len(cps)-1])
				if err != nil {
					t.Fatalf("last checkpoint's workspace version %q: %v", cps[len(cps)-1], err)
				}
				dst := filepath.Join(t.TempDir(), "restored")
				if _, err := workspace.NewVersioner(arts, workspace.Limits{}).Restore(context.Background(), v, dst); err != nil {
					t.Fatal(err)
				}
				for name, want := range tc.files {
					if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
						t.Errorf("run %s: %s = %q, %v; want %q", id, name, got, err, want)
					}
				}
			}
		})
	}
}
