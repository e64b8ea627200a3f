package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProgramsFromTheEnvironment: a path `make test` names is used as it
// is, nothing built.
func TestProgramsFromTheEnvironment(t *testing.T) {
	SkipShort(t, "the functions under test skip under -short")
	dir := t.TempDir()
	for _, p := range []struct {
		env string
		get func(testing.TB) string
	}{{KeelEnv, Keel}, {PubserverEnv, Pubserver}} {
		want := filepath.Join(dir, p.env)
		if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(p.env, want)
		if got := p.get(t); got != want {
			t.Errorf("%s set to %s: got %s", p.env, want, got)
		}
	}
}

// TestWorkDir: the programs' directory exists (under go test, the test
// binary's own directory in the go command's work directory).
func TestWorkDir(t *testing.T) {
	dir, err := workDir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("workDir %s: %v", dir, err)
	}
}

// TestBuildOnce: a package is built on its first use only; a second test
// gets the same file.
func TestBuildOnce(t *testing.T) {
	const pkg = "github.com/keelrun/keel/internal/cmd/pubserver"
	first := Build(t, pkg)
	if fi, err := os.Stat(first); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v, not an executable", first, err)
	}
	if again := Build(t, pkg); again != first {
		t.Errorf("built again: %s, then %s", first, again)
	}
}
