package keel_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/testbin"
)

// TestNewcomerPath walks the README's ten-minute path as a newcomer would,
// each command as the README writes it (the test checks that it does):
// build the stock keel, init a module with --replace, build it, start its
// dev, start a run with --watch in a fresh environment (no KEEL_URL, no
// KEEL_TOKEN: the commands find .keel/), approve it from another command,
// and see it complete, then prove the effect with crashtest on the
// scaffold as generated. Two things differ, and only where the README leaves
// a choice: the module goes to a temporary directory, not ../shop beside
// the clone, and dev listens on a free port (KEEL_ADDR, which the README
// names) so that it cannot collide with anything on 8080.
func TestNewcomerPath(t *testing.T) {
	testbin.SkipShort(t, "builds two programs and a new module")
	readme := readFile(t, "README.md")
	said := func(cmd string) string {
		t.Helper()
		if !strings.Contains(readme, "\n"+cmd+"\n") {
			t.Fatalf("the README's path has no line %q", cmd)
		}
		return cmd
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// A newcomer's shell: none of Keel's variables, go on a module of its
	// own (as init_test does).
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_") && !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GOFLAGS=-mod=mod", "GOWORK=off")
	clone := t.TempDir() // stands for the clone's bin/
	shop := filepath.Join(t.TempDir(), "shop")
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	step := func(dir, stdin string, args ...string) string {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		t.Logf("%s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		return string(out)
	}

	said("go build -o bin/keel ./cmd/keel")
	keel := filepath.Join(clone, "keel")
	step(root, "", "go", "build", "-o", keel, "./cmd/keel")
	said("bin/keel init --replace . ../shop")
	if out := step(root, "", keel, "init", "--replace", ".", shop); !strings.Contains(out, "go mod tidy") || strings.Contains(out, "PATH_TO_KEEL_CHECKOUT") {
		t.Fatalf("init's next step:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(shop, ".gitignore")); err != nil || !strings.Contains(string(b), ".keel/") {
		t.Fatalf(".gitignore %q %v", b, err)
	}
	said("go mod tidy && go test ./...")
	step(shop, "", "go", "mod", "tidy")
	step(shop, "", "go", "test", "./...")
	said("go build -o bin/shop .")
	step(shop, "", "go", "build", "-o", "bin/shop", ".")

	// Each command as typed: bin/shop, relative to the module (exec
	// resolves it against Dir), so the hints must name bin/shop too.
	const bin = "bin/shop"
	said("bin/shop dev")
	dev := exec.Command(bin, "dev")
	dev.Dir, dev.Env = shop, append(env, "KEEL_ADDR=127.0.0.1:0")
	devOut := &lockedBuffer{}
	dev.Stdout, dev.Stderr = devOut, devOut
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dev.Process.Kill()
		_ = dev.Wait()
	})
	viewer := waitFor(t, devOut, regexp.MustCompile(`run viewer: (http://127\.0\.0\.1:\d+/)`))
	if !strings.Contains(devOut.String(), "\nbin/shop dev: serving on") && !strings.HasPrefix(devOut.String(), "bin/shop dev: serving on") {
		t.Errorf("dev's start-up does not name the program:\n%s", devOut)
	}
	// The client commands below check this id before they send the token.
	if b, err := os.ReadFile(filepath.Join(shop, ".keel", "instance")); err != nil || !strings.HasPrefix(string(b), "kins_") {
		t.Errorf(".keel/instance %q %v", b, err)
	}

	said(`bin/shop run --watch assistant "Where is my order ord_1001?"`)
	watch := exec.CommandContext(ctx, bin, "run", "--watch", "assistant", "Where is my order ord_1001?")
	watch.Dir, watch.Env = shop, env
	watchOut := &lockedBuffer{}
	watch.Stdout, watch.Stderr = watchOut, watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	m := waitForAll(t, watchOut, regexp.MustCompile(`answer with: bin/shop approve (run_\S+) (apr_\S+)`))
	runID := m[1]
	if !strings.Contains(watchOut.String(), "run viewer: "+viewer) {
		t.Errorf("the approval hint does not name the viewer %s:\n%s", viewer, watchOut)
	}

	said("bin/shop approve RUN_ID")
	if out := step(shop, "y\n", bin, "approve", runID); !strings.Contains(out, "send_email") {
		t.Errorf("approve did not show the action:\n%s", out)
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("run --watch: %v\n%s", err, watchOut)
	}
	if !strings.Contains(watchOut.String(), "completed") {
		t.Fatalf("run --watch:\n%s", watchOut)
	}
	said("bin/shop events RUN_ID")
	if out := step(shop, "", bin, "events", runID); !strings.Contains(out, "op_succeeded") {
		t.Errorf("events:\n%s", out)
	}
	if sent, _ := filepath.Glob(filepath.Join(shop, ".keel", "outbox", "*.json")); len(sent) != 1 {
		t.Errorf("the outbox holds %v, want the one email", sent)
	}

	// Step 6, with dev still serving: crashtest plays its own programs
	// and passes on the scaffold as generated.
	said("bin/shop crashtest")
	out := step(shop, "", bin, "crashtest")
	if !regexp.MustCompile(`\d+ runs, \d+ rows, [1-9]\d* kills: \d+ passed, 0 failed, 0 unverified`).MatchString(out) ||
		!strings.Contains(out, "send_email") {
		t.Errorf("crashtest:\n%s", out)
	}
}

// lockedBuffer is a child's output, written by exec's copying goroutine
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ io.Writer = (*lockedBuffer)(nil)

// waitFor waits until re matches the output and returns its first group.
func waitFor(t *testing.T, out *lockedBuffer, re *regexp.Regexp) string {
	t.Helper()
	return waitForAll(t, out, re)[1]
}

func waitForAll(t *testing.T, out *lockedBuffer, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %q in:\n%s", re, out)
	return nil
}
