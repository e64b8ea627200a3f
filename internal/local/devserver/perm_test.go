package devserver_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/local/devserver"
)

// TestDataDirIsOwnerOnly is item 3 of issue #32: under the usual umask the
// data directory was 0755, keel.db and its WAL 0644, artifacts/ 0755,
// where the documentation promises 0700. Under a umask that narrows
// nothing (0), everything keel dev creates must still be owner-only:
// directories 0700, files 0600. Not parallel: the umask is the process's.
func TestDataDirIsOwnerOnly(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })

	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data") // created by keel dev itself
	env := map[string]string{"KEEL_DATA_DIR": dir}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := compose.Open(ctx, cfg.Defaults(), fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")}), compose.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt, TaskCommand: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// A small artifact (linked to its object) and a large one (a pointer
	// file), so both kinds of file and their directories exist.
	for name, data := range map[string][]byte{"small.txt": []byte("hello"), "large.bin": bytes.Repeat([]byte("x"), 1<<20)} {
		if _, err := rt.Artifacts.Put(ctx, artifact.Key{RunID: "run_perm", CheckpointID: "c1", Name: name}, data); err != nil {
			t.Fatal(err)
		}
	}

	var files int
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = fs.ModeDir | 0o700
		} else {
			files++
		}
		if fi.Mode() != want {
			rel, _ := filepath.Rel(dir, p)
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"keel.db", "keel.db-wal", "keel.db-shm", "token", "url", "artifacts"} {
		if _, err := fs.Stat(os.DirFS(dir), p); err != nil {
			t.Errorf("%s was not created: %v", p, err)
		}
	}
	t.Logf("%d files checked", files)
}
