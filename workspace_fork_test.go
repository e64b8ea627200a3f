package keel_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/workspace"
)

// stamper writes two files, then stamps: records what a.txt held (seen.txt)
// and overwrites a.txt with the id of the run that stamps. A fork taken
// before the stamp stamps with its own id, on its own tree.
func stamper() keel.Agent {
	a := coder(`{"turns":[
 {"text":"one","tool_calls":[{"name":"write_file","args":{"path":"a.txt","content":"one"}}]},
 {"text":"two","tool_calls":[{"name":"write_file","args":{"path":"b.txt","content":"two"}}]},
 {"text":"stamp","tool_calls":[{"name":"stamp","args":{}}]}
],"final":"stamped"}`)
	a.Tools = append(a.Tools, keel.ReadOnly("stamp", "stamp a.txt with the run's id", func(ctx context.Context, _ struct{}) (string, error) {
		w, err := keel.RunWorkspace(ctx)
		if err != nil {
			return "", err
		}
		old, err := w.ReadFile("a.txt")
		if err != nil {
			return "", err
		}
		if err := w.WriteFile("seen.txt", old, 0o644); err != nil {
			return "", err
		}
		c, _ := keel.CurrentCall(ctx)
		return string(old), w.WriteFile("a.txt", []byte(c.RunID), 0o644)
	}))
	return a
}

// TestWorkspaceFork forks a run at the checkpoint before its stamp: the
// child starts from the parent's files at that checkpoint (a.txt is
// "one", not the parent's later stamp), and neither run's writes show in
// the other's tree, on this worker or restored from the artifact store.
func TestWorkspaceFork(t *testing.T) {
	dataDir, root := t.TempDir(), wsRoot(t)
	d := startDev(t, dataDir, root, stamper())
	defer d.Close()
	c := clientOf(t, d)
	parent := startRun(t, c, "coder", "stamp it")
	waitRun(t, c, parent, run.StatusCompleted)

	arts, err := fs.New(filepath.Join(dataDir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	ver := workspace.NewVersioner(arts, workspace.Limits{})
	restore := func(version string) string {
		t.Helper()
		v, err := workspace.ParseVersion(version)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(t.TempDir(), "tree")
		if _, err := ver.Restore(context.Background(), v, dst); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	// The fork point: the last checkpoint whose tree has b.txt and no
	// stamp yet.
	page, err := c.ListCheckpoints(context.Background(), parent, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var forkAt, forkVersion string
	for _, cp := range page.Checkpoints {
		if cp.WorkspaceVersion == "" {
			continue
		}
		tree := restore(cp.WorkspaceVersion)
		if exists(filepath.Join(tree, "b.txt")) && !exists(filepath.Join(tree, "seen.txt")) {
			forkAt, forkVersion = cp.CheckpointID, cp.WorkspaceVersion
		}
	}
	if forkAt == "" {
		t.Fatalf("no checkpoint between the writes and the stamp: %+v", page.Checkpoints)
	}
	child, _, err := c.Fork(context.Background(), parent, forkAt, "fork-key")
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, c, child.RunID, run.StatusCompleted)

	pv, cv := workspaceVersions(t, c, parent), workspaceVersions(t, c, child.RunID)
	want := map[string]map[string]string{
		parent:      {"a.txt": parent, "b.txt": "two", "seen.txt": "one"},
		child.RunID: {"a.txt": child.RunID, "b.txt": "two", "seen.txt": "one"},
	}
	trees := map[string][]string{
		parent:      {filepath.Join(root, parent), restore(pv[len(pv)-1])},
		child.RunID: {filepath.Join(root, child.RunID), restore(cv[len(cv)-1])},
	}
	for id, files := range want {
		for _, tree := range trees[id] {
			for name, content := range files {
				if got, err := os.ReadFile(filepath.Join(tree, name)); err != nil || string(got) != content {
					t.Errorf("run %s, %s: %s = %q, %v; want %q", id, tree, name, got, err, content)
				}
			}
		}
	}
	// The fork point's version is untouched by both.
	if tree := restore(forkVersion); exists(filepath.Join(tree, "seen.txt")) {
		t.Errorf("the fork point's tree changed: %s has seen.txt", forkVersion)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
