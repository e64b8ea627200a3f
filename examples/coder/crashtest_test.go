package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/keelrun/keel/keeltest"
)

// TestCrashtest: the coder program's own `crashtest` kills it at the
// first hit of every fault point its run reaches — the workspace's
// in_command and in_workspace_snapshot among them — restarts it, and
// counts ship_release's releases at the destination: every row passes,
// killed once, shipped once.
func TestCrashtest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the example's program (make test-go runs it)")
	}
	bin := keeltest.Build(t, ".")
	cmd := exec.Command(bin, "crashtest", "--script", "agent/script.json", "--dir", t.TempDir(), "--json")
	cmd.Env = append(os.Environ(), "CODER_SHIP="+filepath.Join(t.TempDir(), "shipped"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		t.Fatalf("crashtest exit %d\n%s\n%s", ee.ExitCode(), out.String(), errb.String())
	}
	var rep struct {
		Hits map[string]int
		Rows []struct {
			Name       string
			Kills      int
			Violations []string
			Effects    []struct {
				Effect      string `json:"effect"`
				Destination int    `json:"destination"`
				By          string `json:"by"`
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out.String())
	}
	rows := map[string]bool{}
	for _, r := range rep.Rows {
		rows[r.Name] = true
		if r.Kills != 1 || len(r.Violations) > 0 || len(r.Effects) != 1 {
			t.Errorf("%s: kills %d, violations %v, effects %+v", r.Name, r.Kills, r.Violations, r.Effects)
			continue
		}
		if e := r.Effects[0]; e.Effect != "ship_release" || e.Destination != 1 || e.By != "count" {
			t.Errorf("%s: %+v, want ship_release shipped once (by count)", r.Name, e)
		}
	}
	for _, p := range []string{"in_command", "in_workspace_snapshot"} {
		if rep.Hits[p] == 0 || !rows[p+":1"] {
			t.Errorf("%s: %d hits in the unkilled run, row %v", p, rep.Hits[p], rows[p+":1"])
		}
	}
}
