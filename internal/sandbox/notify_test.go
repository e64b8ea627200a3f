package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNotifyWhileRunning: started is called once, while the command
// runs: the command waits for the file started writes, so it could not
// end before the call (the wall-time bound is the hang guard).
func TestRunNotifyWhileRunning(t *testing.T) {
	s := newSandbox(t, false)
	f := newFixture(t)
	calls := 0
	started := func() {
		calls++
		if err := os.WriteFile(filepath.Join(f.ws, "go"), []byte("go"), 0o644); err != nil {
			t.Error(err)
		}
	}
	res, err := s.RunNotify(ctx, f.ws, []string{"sh", "-c", "while [ ! -e go ]; do sleep 0.01; done; echo seen"}, Policy{}, started)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "seen" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if calls != 1 {
		t.Fatalf("started called %d times, want 1", calls)
	}
}
