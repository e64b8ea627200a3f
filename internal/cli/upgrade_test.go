package cli

import (
	"strings"
	"testing"
)

// TestUpgradeCheckSources: the runs come from a store or from the API,
// never from both; the refusal names both flags and reads nothing.
func TestUpgradeCheckSources(t *testing.T) {
	e := newTestEnv(t, false)
	code, stdout, stderr := e.keel("", "upgrade-check", "--api", "--data-dir", t.TempDir())
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--api and --data-dir exclude each other") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
}
