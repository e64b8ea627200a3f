package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/workspace"
)

// wsCheckpoint snapshots files (path → content) as the run's workspace and
// commits a checkpoint naming that version, as the harness does.
func (e *env) wsCheckpoint(runID string, seq int64, files map[string]string) (run.Checkpoint, workspace.Snapshot) {
	e.t.Helper()
	dir := e.t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	snap, err := workspace.NewVersioner(e.arts, workspace.Limits{}).Snapshot(context.Background(), runID, dir, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	cp := run.Checkpoint{ID: run.NewCheckpointID(seq), Seq: seq, Step: seq, State: []byte(`{"messages":[]}`),
		WorkspaceVersion: snap.Version.String()}
	e.commit(runID, store.Commit{Checkpoint: &cp, Run: &store.RunPatch{CheckpointID: cp.ID, StepsDelta: 1}})
	return cp, snap
}

func TestWorkspaceVersionsAndFiles(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	e.checkpoint(r.ID, 1) // a checkpoint without a workspace is not listed
	cp, _ := e.wsCheckpoint(r.ID, 2, map[string]string{"main.go": "package main\n", "src/a.txt": "hello", "src/b/c.md": "# c"})

	var list api.WorkspaceList
	e.doJSON("GET", "/v1/runs/"+r.ID+"/workspace", aliceToken, "", nil, 200, &list)
	if len(list.Versions) != 1 {
		t.Fatalf("versions %+v", list)
	}
	v := list.Versions[0]
	if v.CheckpointID != cp.ID || v.Version != cp.WorkspaceVersion || v.Files != 3 || v.Bytes != int64(len("package main\nhello# c")) || v.Error != "" {
		t.Fatalf("version %+v", v)
	}

	var root api.WorkspaceDir
	e.doJSON("GET", v.Href, aliceToken, "", nil, 200, &root)
	if names := entryNames(root); names != "main.go src" {
		t.Fatalf("root %q", names)
	}
	var src api.WorkspaceDir
	e.doJSON("GET", root.Entries[1].Href, aliceToken, "", nil, 200, &src)
	if names := entryNames(src); names != "a.txt b" || src.Entries[0].Size != 5 {
		t.Fatalf("src %+v", src)
	}
	st, h, b := e.do("GET", src.Entries[0].Href, aliceToken, "", nil)
	if st != 200 || string(b) != "hello" || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") ||
		!strings.Contains(h.Get("Content-Disposition"), `filename=a.txt`) || h.Get("X-Content-SHA256") != src.Entries[0].SHA256 {
		t.Fatalf("download %d %q %v", st, b, h)
	}
	if st, _, _ := e.do("GET", src.Entries[0].Href, bobToken, "", nil); st != 404 {
		t.Errorf("another principal reads alice's workspace: %d", st)
	}
	if st, _, _ := e.do("GET", src.Entries[0].Href, "", "", nil); st != 401 {
		t.Errorf("no token: %d", st)
	}
}

func TestWorkspaceFilesBadInput(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	plain := e.checkpoint(r.ID, 1)
	cp, snap := e.wsCheckpoint(r.ID, 2, map[string]string{"a.txt": "hello"})
	base := "/v1/runs/" + r.ID + "/workspace/files?checkpoint="
	for _, tc := range []struct {
		name, url   string
		status      int
		code, field string
	}{
		{"dotdot", base + cp.ID + "&path=../x", 400, api.CodeInvalidField, "path"},
		{"dotdot inside", base + cp.ID + "&path=a/../../etc/passwd", 400, api.CodeInvalidField, "path"},
		{"no checkpoint", "/v1/runs/" + r.ID + "/workspace/files?path=a.txt", 400, api.CodeMissingField, "checkpoint"},
		{"absolute", base + cp.ID + "&path=/etc/passwd", 400, api.CodeInvalidField, "path"},
		{"absolute root", base + cp.ID + "&path=/", 400, api.CodeInvalidField, "path"},
		{"backslash", base + cp.ID + "&path=..%5Cx", 400, api.CodeInvalidField, "path"},
		{"unknown checkpoint", base + "cp_nope&path=a.txt", 404, api.CodeNotFound, "checkpoint"},
		{"bad checkpoint id", base + "%3Cscript%3E", 404, api.CodeNotFound, "checkpoint"},
		{"checkpoint without workspace", base + plain.ID, 404, api.CodeNotFound, "checkpoint"},
		{"unknown path", base + cp.ID + "&path=b.txt", 404, api.CodeNotFound, ""},
		{"unknown run", "/v1/runs/run_nope/workspace/files?checkpoint=" + cp.ID, 404, api.CodeNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, b := e.do("GET", tc.url, aliceToken, "", nil)
			var body api.ErrorBody
			if err := json.Unmarshal(b, &body); err != nil || st != tc.status || body.Error.Code != tc.code || body.Error.Field != tc.field {
				t.Fatalf("%d %s", st, b)
			}
		})
	}
	// A blob changed behind the store's back is not served.
	blob := e.arts.ObjectPath(snap.Manifest.Entries[0].SHA256)
	if err := os.Chmod(blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, []byte("HELLO"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _, b := e.do("GET", base+cp.ID+"&path=a.txt", aliceToken, "", nil)
	if st != 500 || !strings.Contains(string(b), api.CodeArtifactCorrupt) || strings.Contains(string(b), "HELLO") ||
		!strings.Contains(string(b), "workspace-blobs/"+snap.Manifest.Entries[0].SHA256) {
		t.Fatalf("corrupt blob served, or not named: %d %s", st, b)
	}
}

// TestWorkspaceRunWithout: a run whose checkpoints carry no workspace
// version answers 404 saying so, not a checkpoint error.
func TestWorkspaceRunWithout(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	cp := e.checkpoint(r.ID, 1)
	e.checkpoint(r.ID, 2)
	st, _, b := e.do("GET", "/v1/runs/"+r.ID+"/workspace/files?checkpoint="+cp.ID, aliceToken, "", nil)
	var body api.ErrorBody
	if err := json.Unmarshal(b, &body); err != nil || st != 404 || body.Error.Field != "" || !strings.Contains(body.Error.Message, "has no workspace") {
		t.Fatalf("%d %s", st, b)
	}
	var list api.WorkspaceList
	e.doJSON("GET", "/v1/runs/"+r.ID+"/workspace", aliceToken, "", nil, 200, &list)
	if len(list.Versions) != 0 {
		t.Fatalf("versions of a run without a workspace: %+v", list)
	}
}

// TestWorkspaceDownloadName: the attachment's name is the file's, with
// anything a header or a browser could misread replaced.
func TestWorkspaceDownloadName(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputQueue)
	const name = "r\u00e9sum\u00e9 \"q\";.txt"
	cp, _ := e.wsCheckpoint(r.ID, 1, map[string]string{"d/" + name: "x", ".env": "y"})
	for p, want := range map[string]string{"d/" + name: `filename=r_sum___q__.txt`, ".env": `filename=env`} {
		st, h, b := e.do("GET", "/v1/runs/"+r.ID+"/workspace/files?checkpoint="+cp.ID+"&path="+url.QueryEscape(p), aliceToken, "", nil)
		if st != 200 || h.Get("Content-Disposition") != "attachment; "+want {
			t.Errorf("%q: %d %q %v", p, st, b, h)
		}
	}
}

func entryNames(d api.WorkspaceDir) string {
	var out []string
	for _, e := range d.Entries {
		out = append(out, e.Name)
	}
	return strings.Join(out, " ")
}
