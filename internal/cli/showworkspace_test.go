package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/workspace"
)

// TestShowWorkspace runs keel show against the real API over SQLite and
// the fs artifact store: a run whose checkpoints carry workspace versions
// snapshotted from a real tree prints one line per checkpoint; a run
// without a workspace prints no workspace section.
func TestShowWorkspace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artfs.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Deps{Store: st, Artifacts: arts, Starter: &scriptedStarter{st: st, ctx: ctx}, Resumer: noopResumer{},
		Auth: api.Tokens{token: "cli-user"}, Agents: api.AgentSet{"research": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	keel := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		env := map[string]string{"KEEL_URL": srv.URL, "KEEL_TOKEN": token}
		c := &cli{stdin: bufio.NewReader(strings.NewReader("")), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
		return execute(ctx, args, c), out.String(), errb.String()
	}
	newRun := func() run.Run {
		r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "cli-user", Agent: "research",
			Request: "build", InputPolicy: run.InputQueue, Limits: run.DefaultLimits()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	checkpoint := func(runID string, seq int64, version string) string {
		l, err := st.AcquireLease(ctx, runID, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cp := run.Checkpoint{ID: run.NewCheckpointID(seq), Seq: seq, Step: seq, State: []byte(`{}`), WorkspaceVersion: version}
		if _, err := st.Commit(ctx, store.Commit{RunID: runID, Token: l.Lease.Token, Checkpoint: &cp,
			Run: &store.RunPatch{CheckpointID: cp.ID, ReleaseLease: true}}); err != nil {
			t.Fatal(err)
		}
		return cp.ID
	}

	r := newRun()
	tree := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := workspace.NewVersioner(arts, workspace.Limits{})
	write("main.go", "package main\n")
	s1, err := v.Snapshot(ctx, r.ID, tree, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(r.ID, 1, "")                         // before the workspace: no line
	cp2 := checkpoint(r.ID, 2, s1.Version.String()) // 1 file, 13 bytes
	write("docs/notes.md", "twelve bytes")
	s2, err := v.Snapshot(ctx, r.ID, tree, s1.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	cp3 := checkpoint(r.ID, 3, s2.Version.String()) // 2 files, 25 bytes

	code, out, errout := keel("show", r.ID)
	if code != 0 {
		t.Fatalf("show: %d %s %s", code, out, errout)
	}
	lines := regexp.MustCompile(`(?m)^  (\S+) +(\d+) +([0-9a-f]{12}) +(\d+) +(\d+)$`).FindAllStringSubmatch(out, -1)
	if !strings.Contains(out, "\nworkspace:\n") || len(lines) != 2 {
		t.Fatalf("show prints %d workspace lines:\n%s", len(lines), out)
	}
	for i, want := range []struct {
		cp, seq, version, files, bytes string
	}{
		{cp2, "2", s1.Version.SHA256[:12], "1", "13"},
		{cp3, "3", s2.Version.SHA256[:12], "2", "25"},
	} {
		got := lines[i][1:]
		if got[0] != want.cp || got[1] != want.seq || got[2] != want.version || got[3] != want.files || got[4] != want.bytes {
			t.Errorf("line %d: %q, want %+v", i, got, want)
		}
	}
	code, out, _ = keel("show", "--json", r.ID)
	var shown struct {
		Workspace []api.WorkspaceVersion `json:"workspace"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || len(shown.Workspace) != 2 || shown.Workspace[1].Version != s2.Version.String() {
		t.Errorf("show --json: %d %v %s", code, err, out)
	}

	// One file by its path: as of the last checkpoint by default, or of
	// the one named; a path the version does not hold is not found.
	if code, out, errout := keel("file", r.ID, "docs/notes.md"); code != 0 || out != "twelve bytes" {
		t.Errorf("file: %d %q %s", code, out, errout)
	}
	if code, out, errout := keel("file", "--checkpoint", cp2, r.ID, "main.go"); code != 0 || out != "package main\n" {
		t.Errorf("file --checkpoint: %d %q %s", code, out, errout)
	}
	if code, _, errout := keel("file", "--checkpoint", cp2, r.ID, "docs/notes.md"); code != exitNotFound || !strings.Contains(errout, "path not found") {
		t.Errorf("file of a path the version lacks: %d %s", code, errout)
	}

	// No workspace: show is as before.
	plain := newRun()
	checkpoint(plain.ID, 1, "")
	if code, out, _ := keel("show", plain.ID); code != 0 || strings.Contains(out, "workspace") {
		t.Errorf("show of a run without a workspace: %d\n%s", code, out)
	}
}

// TestShowWorkspaceIsTermSafe feeds hostile server values to the printer:
// nothing a terminal acts on gets through, the columns stay.
func TestShowWorkspaceIsTermSafe(t *testing.T) {
	const hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	var out strings.Builder
	c := &cli{stdout: &out}
	showWorkspace(c, "run_a", []api.WorkspaceVersion{
		{CheckpointID: "cp\x1b]0;pwned\x07", Seq: 1, Version: "sha256:" + hex + "@run_a", Files: 3, Bytes: 42},
		{CheckpointID: "cp_2", Seq: 2, Version: "sha256:" + hex + "@run_parent\u202e", Files: 1, Bytes: 7},
		{CheckpointID: "cp_3", Seq: 3, Version: "not-a-version\x1b[2J", Error: "bad\x9b manifest"},
	})
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07\u202e") || strings.IndexByte(got, 0x9b) >= 0 {
		t.Fatalf("escapes reach the terminal:\n%q", got)
	}
	for _, want := range []string{`cp\x1b]0;pwned\x07  1`, "0123456789ab                   3", `0123456789ab@run_parent\u202e`, `not-a-version\x1b[2J`, `unreadable: bad\x9b manifest`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
