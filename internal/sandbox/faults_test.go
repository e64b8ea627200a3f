package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFaultsStopped: each bad command is stopped with a LimitError naming
// its limit, within its wall time, and the test process lives on.
func TestFaultsStopped(t *testing.T) {
	s := newSandbox(t, false)
	for _, tc := range []struct {
		name    string
		script  string
		policy  Policy
		reasons []Reason // acceptable reasons
	}{
		{"never ends", "while :; do :; done", Policy{WallTime: time.Second}, []Reason{WallTime}},
		{"sleeps forever", "sleep 1000", Policy{WallTime: 500 * time.Millisecond}, []Reason{WallTime}},
		{"gigabytes of output", "head -c 5000000000 /dev/zero", Policy{MaxOutputBytes: 1 << 20, WallTime: 30 * time.Second}, []Reason{Output}},
		{"cpu hog", "while :; do :; done", Policy{CPUTime: time.Second, WallTime: 20 * time.Second}, []Reason{CPU}},
		{"memory hog", `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo ${#x}`, Policy{MemoryBytes: 32 << 20, WallTime: 30 * time.Second}, []Reason{Memory}},
		{"fork bomb", "f() { f | f; }; f", Policy{MaxProcs: 32, WallTime: 3 * time.Second}, []Reason{Processes, WallTime}},
		{"huge file", "head -c 100000000 /dev/zero > big", Policy{MaxFileBytes: 1 << 20, WallTime: 30 * time.Second}, []Reason{FileSize}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			start := time.Now()
			res, err := s.Run(ctx, f.ws, sh(tc.script), tc.policy)
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("Run = %v (exit %d, stderr %q), want ErrLimit", err, res.ExitCode, res.Stderr)
			}
			got := limitReason(err)
			ok := false
			for _, r := range tc.reasons {
				ok = ok || got == r
			}
			if !ok {
				t.Fatalf("reason %q (%v), want one of %v", got, err, tc.reasons)
			}
			if wall := tc.policy.WithDefaults().WallTime; time.Since(start) > wall+5*time.Second {
				t.Errorf("took %s, wall time %s", time.Since(start), wall)
			}
			if int64(len(res.Stdout)+len(res.Stderr)) > tc.policy.WithDefaults().MaxOutputBytes {
				t.Errorf("kept %d bytes of output", len(res.Stdout)+len(res.Stderr))
			}
			t.Logf("%v; exit %d, %s, killed=%v truncated=%v", err, res.ExitCode, res.Duration.Round(time.Millisecond), res.Killed, res.Truncated)
		})
	}
}

// TestProcessLimitBounds counts the processes a command manages to start:
// each child records itself; dash gives up at the first failed fork.
func TestProcessLimitBounds(t *testing.T) {
	f := newFixture(t)
	script := `i=0; while [ $i -lt 100 ]; do (echo x >> started; sleep 5) & i=$((i+1)); done`
	res, err := newSandbox(t, false).Run(ctx, f.ws, sh(script), Policy{MaxProcs: 16, WallTime: 20 * time.Second})
	b, rerr := os.ReadFile(filepath.Join(f.ws, "started"))
	if rerr != nil {
		t.Fatalf("no child started: %v (%v, %q)", rerr, err, res.Stderr)
	}
	if n := strings.Count(string(b), "x"); n == 0 || n > 16 {
		t.Fatalf("%d processes started under MaxProcs 16", n)
	}
	if limitReason(err) != Processes {
		t.Errorf("Run = %v, want the processes limit named", err)
	}
}

// TestWallTimeKillsTheWholeTree: a background child left running is gone
// after the command is killed (pid namespace and die-with-parent).
func TestWallTimeKillsTheWholeTree(t *testing.T) {
	f := newFixture(t)
	script := `(while :; do echo x >> tick; sleep 0.05; done) & sleep 1000`
	_, err := newSandbox(t, false).Run(ctx, f.ws, sh(script), Policy{WallTime: 2 * time.Second})
	if limitReason(err) != WallTime {
		t.Fatalf("Run = %v, want a wall time kill", err)
	}
	tick := filepath.Join(f.ws, "tick")
	before, _ := os.ReadFile(tick)
	time.Sleep(300 * time.Millisecond)
	if after, _ := os.ReadFile(tick); len(after) != len(before) || len(before) == 0 {
		t.Fatalf("background child: %d bytes written at the kill, %d after, want some then none", len(before), len(after))
	}
}

func TestSetupErrors(t *testing.T) {
	s := newSandbox(t, false)
	for _, tc := range []struct {
		name string
		dir  string
		argv []string
	}{
		{"no command", t.TempDir(), nil},
		{"missing workspace", filepath.Join(t.TempDir(), "nope"), sh("true")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Run(ctx, tc.dir, tc.argv, Policy{}); !errors.Is(err, ErrSetup) {
				t.Fatalf("Run = %v, want ErrSetup", err)
			}
		})
	}
	res, err := s.Run(ctx, newFixture(t).ws, sh("exit 3"), Policy{})
	if err != nil || res.ExitCode != 3 || res.Killed {
		t.Fatalf("exit 3: %+v %v, want a plain result", res, err)
	}
}
