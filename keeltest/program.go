package keeltest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles the main package pkg (as `go build` names it, relative to
// the test's directory: "." for the package under test) into a binary in
// a temporary directory and returns its path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "app")
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("keeltest: go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// BuildReachable is Build into a directory every user of the machine can
// read and search, for a program a sandbox runs (a stdio MCP server of an
// agent with Workspace.Commands): the sandbox runs as nobody when the
// worker is root, and a test's temporary directories are the test's user
// alone. The directory is removed when the test ends.
func BuildReachable(t testing.TB, pkg string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "keeltest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "app")
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("keeltest: go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Program is a Keel program's `dev` running in a child process, on a data
// directory that outlives it: kill it (or let a fault point kill it) and
// restart it, and its runs go on where they stopped.
type Program struct {
	*Runtime
	bin, dir string
	cmd      *exec.Cmd
	done     chan struct{}
	out      *syncBuffer
}

// syncBuffer is the child's output, written by exec's copying goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartProgram runs `bin dev` on a fresh data directory and a free port,
// with env added to the test's environment (e.g. KEEL_FAULTPOINT=
// after_dispatch), and waits until it serves. The process is killed when
// the test ends.
func StartProgram(t testing.TB, bin string, env ...string) *Program {
	t.Helper()
	p := &Program{bin: bin, dir: t.TempDir()}
	p.start(t, env)
	t.Cleanup(func() { p.Kill(t) })
	return p
}

func (p *Program) start(t testing.TB, env []string) {
	t.Helper()
	urlFile := filepath.Join(p.dir, "url")
	_ = os.Remove(urlFile)
	p.out = &syncBuffer{}
	p.cmd = exec.Command(p.bin, "dev", "--data-dir", p.dir, "--addr", "127.0.0.1:0")
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("keeltest: start %s: %v", p.bin, err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(p.cmd, p.done)
	deadline := time.Now().Add(HangGuard)
	for {
		b, err := os.ReadFile(urlFile)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			tok, err := os.ReadFile(filepath.Join(p.dir, "token"))
			if err != nil {
				t.Fatalf("keeltest: token: %v", err)
			}
			p.Runtime = connect(t, strings.TrimSpace(string(b)), strings.TrimSpace(string(tok)))
			return
		}
		select {
		case <-p.done:
			t.Fatalf("keeltest: %s dev exited before serving:\n%s", p.bin, p.out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("keeltest: %s dev did not serve:\n%s", p.bin, p.out)
		}
	}
}

// DataDir is the program's data directory (its store, artifacts and
// files), which outlives every restart.
func (p *Program) DataDir() string { return p.dir }

// Exited is closed when the process has exited (a fault point's SIGKILL,
// a crash, or Kill).
func (p *Program) Exited() <-chan struct{} { return p.done }

// WaitExit waits until the process has exited, as a fault point makes it.
func (p *Program) WaitExit(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(HangGuard):
		t.Fatalf("keeltest: %s did not exit:\n%s", p.bin, p.out)
	}
}

// Kill SIGKILLs the process (no deferred code, no graceful shutdown) and
// waits for it.
func (p *Program) Kill(t testing.TB) {
	t.Helper()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Restart starts the program again on the same data directory, with env
// (the first start's env is not kept), after killing it if it still runs.
func (p *Program) Restart(t testing.TB, env ...string) {
	t.Helper()
	p.Kill(t)
	p.start(t, env)
}

// Output is what the process wrote to stdout and stderr so far.
func (p *Program) Output() string { return p.out.String() }
