package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/workspace"
)

// TestWorkspace reads a run's workspace through the client against the
// real API: versions, a directory, a file checked against its hash, and
// the API's refusals as *api.Error naming the field.
func TestWorkspace(t *testing.T) {
	ctx := context.Background()
	h, st, arts := newAPI(t, 0)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)

	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "me", Agent: "research",
		Request: "x", InputPolicy: run.InputQueue, Limits: run.DefaultLimits()})
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "src", "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := workspace.NewVersioner(arts, workspace.Limits{}).Snapshot(ctx, r.ID, tree, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, r.ID, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp := run.Checkpoint{ID: run.NewCheckpointID(1), Seq: 1, Step: 1, State: []byte(`{}`), WorkspaceVersion: snap.Version.String()}
	if _, err := st.Commit(ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token, Checkpoint: &cp,
		Run: &store.RunPatch{CheckpointID: cp.ID, ReleaseLease: true}}); err != nil {
		t.Fatal(err)
	}

	vs, err := c.Workspace(ctx, r.ID)
	if err != nil || len(vs) != 1 || vs[0].CheckpointID != cp.ID || vs[0].Files != 1 || vs[0].Bytes != 5 {
		t.Fatalf("versions %+v %v", vs, err)
	}
	d, err := c.WorkspaceDir(ctx, r.ID, cp.ID, "src")
	if err != nil || len(d.Entries) != 1 || d.Entries[0].Name != "a.txt" || d.Entries[0].Type != workspace.TypeFile {
		t.Fatalf("dir %+v %v", d, err)
	}
	b, sum, err := c.WorkspaceFile(ctx, r.ID, cp.ID, "src/a.txt")
	if err != nil || string(b) != "hello" || sum != d.Entries[0].SHA256 {
		t.Fatalf("file %q %s %v", b, sum, err)
	}
	if _, _, err := c.WorkspaceFile(ctx, r.ID, cp.ID, "src"); err == nil {
		t.Error("a directory downloaded as a file")
	}
	for _, tc := range []struct {
		cp, path, field string
		status          int
	}{
		{cp.ID, "../etc/passwd", "path", 400},
		{cp.ID, "/etc/passwd", "path", 400},
		{"cp_nope", "", "checkpoint", 404},
	} {
		_, err := c.WorkspaceDir(ctx, r.ID, tc.cp, tc.path)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != tc.status || ae.Field != tc.field {
			t.Errorf("%s %q: %v", tc.cp, tc.path, err)
		}
	}
}
