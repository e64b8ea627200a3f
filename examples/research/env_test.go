package research_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/examples/research"
)

func TestConfigFromEnviron(t *testing.T) {
	cases := []struct {
		name    string
		environ []string
		want    string // "" means accepted
	}{
		{"defaults", []string{"PATH=/bin"}, ""},
		{"own variables", []string{"RESEARCH_PUBLISH=http://127.0.0.1:9", "RESEARCH_PUBLISH_CONTRACT=lookup", "RESEARCH_PUBLISH_TIMEOUT=5s"}, ""},
		{"misspelled", []string{"RESEARCH_PUBLSH=http://127.0.0.1:9"}, "RESEARCH_PUBLSH is not one of RESEARCH_PUBLISH"},
		{"unparsable", []string{"RESEARCH_PUBLISH_TIMEOUT=soon"}, "RESEARCH_PUBLISH_TIMEOUT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := research.ConfigFromEnviron(tc.environ)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestStockBinaryRefusesUnknownConfiguration runs the stock keel binary
// (cmd/keel: the research agent under keel.Main) as a real process, as
// keel dev and as a deployed role, with a variable it would otherwise
// ignore: it stops at start and names the variable.
func TestStockBinaryRefusesUnknownConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the keel binary")
	}
	bin := filepath.Join(t.TempDir(), "keel")
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "github.com/keelrun/keel/cmd/keel").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	role := []string{"KEEL_TABLE=t", "KEEL_BUCKET=b", "KEEL_STATE_MACHINE_ARN=arn:aws:states:us-east-1:1:stateMachine:x"}
	cases := []struct {
		name string
		args []string
		env  []string
		code int
		want string
	}{
		{"dev, moved", []string{"dev", "--data-dir", dir}, []string{"KEEL_PUBLISH=http://127.0.0.1:9"}, 2, "moved to RESEARCH_PUBLISH"},
		{"dev, misspelled", []string{"dev", "--data-dir", dir}, []string{"KEEL_STEP_BUGDET=1m"}, 2, "KEEL_STEP_BUGDET"},
		{"dev, agent's own", []string{"dev", "--data-dir", dir}, []string{"RESEARCH_PUBLSH=dir:/tmp"}, 2, "RESEARCH_PUBLSH"},
		{"api role, moved", nil, append([]string{"KEEL_ROLE=api", "KEEL_PUBLISH_CONTRACT=none"}, role...), 1, "moved to RESEARCH_PUBLISH_CONTRACT"},
		{"step role, unparsable", nil, append([]string{"KEEL_ROLE=step", "KEEL_STEP_MARGIN=lots"}, role...), 1, "KEEL_STEP_MARGIN"},
		{"task role, misspelled", nil, append([]string{"KEEL_ROLE=task", "KEEL_RUN_ID=run_1", "KEEL_TASK_TOKEN=tok", "KEEL_RUNID=run_1"}, role...), 1, "KEEL_RUNID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = dir
			cmd.Env = append(cleanEnv(), tc.env...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(string(out), tc.want) {
				t.Fatalf("%v, output %q; want exit %d naming %q", err, out, tc.code, tc.want)
			}
		})
	}
}

// cleanEnv is this process's environment without KEEL_* and RESEARCH_*
// variables, so the cases alone decide.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_") && !strings.HasPrefix(kv, "RESEARCH_") {
			env = append(env, kv)
		}
	}
	return env
}
