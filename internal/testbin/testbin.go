// Package testbin hands tests the programs they run as child processes,
// each built once per test binary, not once per test: the stock keel
// program (cmd/keel, the research agent under keel.Main), the research
// agent's publication server (internal/cmd/pubserver), and any other main
// package (Build).
//
// `make test` builds the first two once, before its suites start (the
// Makefile's test-bins target), and names them in TESTBIN_KEEL and
// TESTBIN_PUBSERVER, so every package's tests and the browser test run
// the same two files instead of linking their own. Without those
// variables a test binary builds what it needs on first use: into the go
// command's work directory when `go test` runs it (removed with it), else
// into a temporary directory.
//
// Under -short every function here skips the calling test: a test that
// runs a program in a child process is not the fast loop (`make check`).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The variables `make test` sets, each to the absolute path of a program
// it built from the checkout under test.
const (
	KeelEnv      = "TESTBIN_KEEL"
	PubserverEnv = "TESTBIN_PUBSERVER"
)

// SkipShort skips t under -short, saying why (what makes it slow) and
// which make target runs it.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s (make test-go runs it)", why)
	}
}

// Keel is the path of the stock keel program (cmd/keel).
func Keel(t testing.TB) string {
	t.Helper()
	return fromEnv(t, KeelEnv, "github.com/keelrun/keel/cmd/keel")
}

// Pubserver is the path of the publication server
// (internal/cmd/pubserver).
func Pubserver(t testing.TB) string {
	t.Helper()
	return fromEnv(t, PubserverEnv, "github.com/keelrun/keel/internal/cmd/pubserver")
}

// Build is the path of the main package pkg (as `go build` names it: an
// import path, or a directory relative to the test's package), built
// with no tags on its first use in this test binary.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	SkipShort(t, "builds "+pkg+" and runs it in a child process")
	mu.Lock()
	b, ok := built[pkg]
	if !ok {
		b = &program{name: fmt.Sprintf("%d-%s", len(built), path.Base(pkg))}
		built[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = build(b.name, pkg) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// program is one main package built by this test binary.
type program struct {
	once       sync.Once
	name, path string
	err        error
}

var (
	mu       sync.Mutex
	built    = map[string]*program{}
	buildDir = sync.OnceValues(workDir)
)

// fromEnv is the path in the variable env when it is set (an absolute
// path to an existing file, or the test fails), else Build's of pkg.
func fromEnv(t testing.TB, env, pkg string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		return Build(t, pkg)
	}
	SkipShort(t, "runs "+filepath.Base(p)+" in a child process")
	if !filepath.IsAbs(p) {
		t.Fatalf("%s=%s: not an absolute path", env, p)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return p
}

// build compiles the main package pkg into the build directory as name.
func build(name, pkg string) (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// workDir is the directory of the test binary when the go command runs it
// from its work directory ($WORK/b001/x.test, $WORK a "go-build" temporary
// directory it removes when it exits), else a new temporary directory.
func workDir() (string, error) {
	dir := filepath.Dir(os.Args[0])
	if strings.HasPrefix(filepath.Base(filepath.Dir(dir)), "go-build") {
		return dir, nil
	}
	return os.MkdirTemp("", "keel-testbin-")
}
