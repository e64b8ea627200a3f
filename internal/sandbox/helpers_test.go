package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var ctx = context.Background()

// newSandbox returns an isolated or an unsafe sandbox; the isolated one
// skips only where bubblewrap is not installed.
func newSandbox(t testing.TB, unsafe bool) *Sandbox {
	t.Helper()
	if !unsafe {
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skip("bubblewrap is not installed (Debian: apt-get install -y bubblewrap); isolation tests need it")
		}
	}
	s, err := New(ctx, Config{Unsafe: unsafe})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// needSocat skips where socat is missing, as newSandbox does without
// bubblewrap: a policy with AllowHosts needs it (TestAllowHostsNeedsSocat
// covers its absence).
func needSocat(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("socat"); err != nil {
		t.Skip("socat is not installed (Debian: apt-get install -y socat); AllowHosts tests need it")
	}
}

// fixture lays out what a worker's host holds around one run's workspace:
// a sibling run's workspace and a database file, each with a canary.
type fixture struct {
	base, ws, sibling, db string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	base := t.TempDir()
	// The sandbox uid (worker is root) must be able to reach the workspace.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	f := fixture{base: base, ws: filepath.Join(base, "runs", "run-a"), sibling: filepath.Join(base, "runs", "run-b"), db: filepath.Join(base, "keel.db")}
	for _, d := range []string{f.ws, f.sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(f.sibling, "canary.txt"), "canary-sibling-7f3a")
	write(t, f.db, "canary-db-91c2")
	write(t, filepath.Join(f.ws, "input.txt"), "hello from the workspace")
	return f
}

func write(t testing.TB, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func limitReason(err error) Reason {
	var le *LimitError
	if errors.As(err, &le) {
		return le.Reason
	}
	return ""
}
