package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/cli"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
)

// TestUnknownConfigurationStops is item 10 of issue #32: an unknown
// KEEL_* variable, a moved one, or a known one whose value does not
// parse stops keel dev, the task, step and every role at start, through
// the entry point keel.Main calls (MainLazy with os.Environ), with an
// error naming the variable.
func TestUnknownConfigurationStops(t *testing.T) {
	dir := t.TempDir()
	load := func() (compose.App, error) { return fixturetest.App(fixture.DirPublisher{Dir: dir}), nil }
	type entry struct {
		name string
		args []string
		env  map[string]string
		code int
	}
	role := func(r string) entry {
		env := map[string]string{"KEEL_ROLE": r, "KEEL_TABLE": "t", "KEEL_BUCKET": "b", "KEEL_STATE_MACHINE_ARN": "arn:x",
			"KEEL_RUN_ID": "run_1", "KEEL_TASK_TOKEN": "tok"}
		return entry{name: "role " + r, env: env, code: 1}
	}
	entries := []entry{
		{name: "dev", args: []string{"dev", "--data-dir", dir, "--addr", "127.0.0.1:0"}, code: 2},
		{name: "task", args: []string{"task"}, env: map[string]string{"KEEL_SFN_ENDPOINT": "http://127.0.0.1:1"}, code: 2},
		{name: "step", args: []string{"step", "run_x"}, code: 2},
	}
	for _, r := range append(config.LambdaRoles, config.RoleTask) {
		entries = append(entries, role(r))
	}
	bad := []struct {
		name, kv, want string
	}{
		{"misspelled", "KEEL_STEP_BUGDET=30s", "KEEL_STEP_BUGDET is not a Keel variable"},
		{"moved", "KEEL_PUBLISH=http://127.0.0.1:9", "KEEL_PUBLISH is no longer read: it moved to RESEARCH_PUBLISH"},
		{"moved contract", "KEEL_PUBLISH_CONTRACT=none", "moved to RESEARCH_PUBLISH_CONTRACT"},
		{"unparsable", "KEEL_LEASE_TTL=forever", "KEEL_LEASE_TTL"},
		{"unparsable provider setting", "KEEL_MODEL_TPM=lots", "KEEL_MODEL_TPM"},
	}
	for _, e := range entries {
		for _, b := range bad {
			t.Run(e.name+"/"+b.name, func(t *testing.T) {
				env := map[string]string{}
				for k, v := range e.env {
					env[k] = v
				}
				k, v, _ := strings.Cut(b.kv, "=")
				env[k] = v
				var environ []string
				for k, v := range env {
					environ = append(environ, k+"="+v)
				}
				var out, errb strings.Builder
				code := cli.MainLazy(context.Background(), cli.IO{Prog: "shop", Args: e.args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
					Getenv: func(k string) string { return env[k] }, Environ: func() []string { return environ }}, load)
				if code != e.code || !strings.Contains(errb.String(), b.want) {
					t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, e.code, errb.String(), b.want)
				}
			})
		}
	}
}

// TestKnownConfigurationAccepted: every variable Keel's own make targets,
// CI and tests set passes CheckEnviron, as do the documented ones.
func TestKnownConfigurationAccepted(t *testing.T) {
	environ := []string{"PATH=/bin", "KEEL_URL=http://x", "KEEL_TOKEN=t", "KEEL_E2E_LOCALSTACK=1", "KEEL_AWSLOCAL=1",
		"KEEL_BIN=/tmp/keel", "KEEL_MODEL=scripted:x", "KEEL_MODEL_SECRET_ARN=arn", "KEEL_SPILL_TOOLS=a", "KEEL_TASK_FAULTPOINT=x",
		"KEEL_SWEEP_MIN_AGE=1m", "KEEL_OPENAI_SECRET_ARN=arn", "KEEL_CRASH_CHILD=1", "RESEARCH_PUBLISH=dir:/tmp"}
	if err := config.CheckEnviron(environ); err != nil {
		t.Fatal(err)
	}
}
