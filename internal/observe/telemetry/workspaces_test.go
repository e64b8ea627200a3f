package telemetry_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// The bundle names each checkpoint's workspace manifest (path, size, hash)
// and never the files' content; a manifest it cannot read is named with
// its error, not dropped and not failing the bundle.
func TestBundleHoldsWorkspaceManifestsNotContent(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arts, err := artfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "a", Request: "x", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const content = "CONTENT-NOT-IN-BUNDLE"
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := workspace.NewVersioner(arts, workspace.Limits{}).Snapshot(ctx, r.ID, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := workspace.Version{RunID: r.ID, SHA256: strings.Repeat("0", 64)}.String()
	for i, v := range []string{"", snap.Version.String(), missing} {
		lr, err := st.AcquireLease(ctx, r.ID, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cp := run.Checkpoint{ID: run.NewCheckpointID(int64(i + 1)), Seq: int64(i + 1), Step: int64(i + 1), State: []byte(`{"messages":[]}`), WorkspaceVersion: v}
		if _, err := st.Commit(ctx, store.Commit{RunID: r.ID, Token: lr.Lease.Token, Checkpoint: &cp,
			Run: &store.RunPatch{CheckpointID: cp.ID, StepsDelta: 1, ReleaseLease: true}}); err != nil {
			t.Fatal(err)
		}
	}
	_, data, err := telemetry.Build(ctx, st, arts, r.ID, telemetry.Env{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := telemetry.ReadArchive(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if strings.Contains(string(b), content) {
			t.Fatalf("%s holds a workspace file's content", name)
		}
	}
	var ws telemetry.Workspaces
	if err := json.Unmarshal(files["workspaces.json"], &ws); err != nil {
		t.Fatal(err)
	}
	if len(ws.Versions) != 2 {
		t.Fatalf("versions %+v", ws.Versions)
	}
	good, bad := ws.Versions[0], ws.Versions[1]
	if good.Version != snap.Version.String() || good.Files != 1 || good.Bytes != int64(len(content)) || good.Manifest == nil ||
		len(good.Manifest.Entries) != 1 || good.Manifest.Entries[0].Path != "out.txt" || good.Manifest.Entries[0].SHA256 != snap.Manifest.Entries[0].SHA256 {
		t.Fatalf("version %+v", good)
	}
	if bad.Version != missing || bad.Manifest != nil || bad.Error == "" {
		t.Fatalf("missing manifest %+v", bad)
	}
}
