package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/cli"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/local/devserver"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// devRuntime is keel dev with the research agent, in this process.
type devRuntime struct {
	t   *testing.T
	srv *devserver.Server
	app compose.App
}

func startDev(t *testing.T) *devRuntime {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	vars := map[string]string{"KEEL_DATA_DIR": dir}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app := fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")})
	rt, err := compose.Open(ctx, cfg, app, compose.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &devRuntime{t: t, srv: srv, app: app}
}

// keel runs the CLI against the dev runtime.
func (d *devRuntime) keel(args ...string) (int, string, string) {
	var out, errb strings.Builder
	env := map[string]string{"KEEL_URL": d.srv.URL, "KEEL_TOKEN": d.srv.Token}
	code := cli.Main(context.Background(), cli.IO{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] }}, d.app)
	return code, out.String(), errb.String()
}

func (d *devRuntime) waitStatus(id string, want ...string) {
	d.t.Helper()
	cl, err := client.New(d.srv.URL, d.srv.Token, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := cl.GetRun(context.Background(), id)
		if err != nil {
			d.t.Fatal(err)
		}
		for _, w := range want {
			if string(r.Status) == w {
				return
			}
		}
	}
	d.t.Fatalf("run %s never reached %v", id, want)
}

// TestExplainBundleDoctorOnDev: a research run on keel dev waits for its
// approval and is cancelled; keel explain tells both states, keel bundle
// downloads the six files, keel doctor answers the ten questions.
func TestExplainBundleDoctorOnDev(t *testing.T) {
	d := startDev(t)
	code, out, errs := d.keel("run", "--json", fixture.AgentName, "What changed in the corpus?")
	if code != 0 {
		t.Fatalf("keel run: %d %s", code, errs)
	}
	var created struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.RunID == "" {
		t.Fatalf("keel run --json: %s (%v)", out, err)
	}
	id := created.RunID
	d.waitStatus(id, "awaiting_approval")

	code, out, errs = d.keel("explain", id)
	if code != 0 {
		t.Fatalf("keel explain: %d %s", code, errs)
	}
	for _, want := range []string{"awaiting_approval", "the model asked for collect_documents", "asked a person to approve publish_report (mutating)",
		"approval apr_", "keel approve " + id + " apr_"} {
		if !strings.Contains(out, want) {
			t.Errorf("keel explain lacks %q:\n%s", want, out)
		}
	}

	if code, _, errs = d.keel("cancel", id); code != 0 {
		t.Fatalf("keel cancel: %d %s", code, errs)
	}
	d.waitStatus(id, "cancelled")
	code, out, errs = d.keel("explain", "--json", id)
	if code != 0 {
		t.Fatalf("keel explain --json: %d %s", code, errs)
	}
	var st explain.Story
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "cancelled" || !strings.Contains(st.Text, "cancel requested by") || !strings.Contains(st.Text, "keel fork "+id) || st.Spend.Tokens == 0 {
		t.Errorf("story %s:\n%s", st.Status, st.Text)
	}

	file := filepath.Join(t.TempDir(), "b.tar.gz")
	if code, _, errs = d.keel("bundle", id, "-o", file); code != 0 {
		t.Fatalf("keel bundle: %d %s", code, errs)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	files, err := telemetry.ReadArchive(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range telemetry.Files {
		if len(files[name]) == 0 {
			t.Errorf("the bundle's %s is empty or missing", name)
		}
	}
	if !strings.Contains(string(files["trace.json"]), `"invoke_agent research"`) || !strings.Contains(string(files["tool_calls.csv"]), ",collect_documents,") ||
		!strings.Contains(string(files["env.txt"]), "model.research=scripted") {
		t.Errorf("bundle contents: trace %.300s\ncsv %s\nenv %s", files["trace.json"], files["tool_calls.csv"], files["env.txt"])
	}
	sizes := map[string]int{}
	for name, b := range files {
		sizes[name] = len(b)
	}
	t.Logf("bundle of a cancelled research run: %d bytes tar.gz; files %v", len(data), sizes)
	if code, _, _ = d.keel("bundle", id, "-o", file); code == 0 {
		t.Error("keel bundle overwrote an existing file without --force")
	}

	code, out, errs = d.keel("doctor")
	if code != 0 {
		t.Fatalf("keel doctor: %d %s", code, errs)
	}
	for _, want := range []string{"1. Which store owns run events and checkpoints?", "KEEL_STORE resolves to sqlite:",
		"research/publish_report: mutating", "10. Can a failed run be explained tomorrow", "GAP ", "executor local"} {
		if !strings.Contains(out, want) {
			t.Errorf("keel doctor lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs = d.keel("doctor", "--strict"); code == 0 || !strings.Contains(errs, "--strict") {
		t.Errorf("keel doctor --strict with gaps: exit %d, %s", code, errs)
	}
}

func TestObserveBadInput(t *testing.T) {
	d := startDev(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "--nope", "run_x"}, "-nope"},
		{[]string{"explain"}, "RUN_ID"},
		{[]string{"bundle", "-o"}, "-o"},
		{[]string{"doctor", "--strict=maybe"}, "-strict"},
		{[]string{"explain", "run_01a2317205ae09cbe8ad00eca5c6"}, "not found"},
	} {
		code, _, errs := d.keel(tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("keel %q: exit %d, stderr %q, want it to name %q", tc.args, code, errs, tc.want)
		}
	}
	// The API names the parameter it refuses.
	req, _ := http.NewRequest(http.MethodGet, d.srv.URL+"/v1/runs/run_x/explain?format=xml", nil)
	req.Header.Set("Authorization", "Bearer "+d.srv.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"field":"format"`) {
		t.Errorf("format=xml: %d %s", resp.StatusCode, body)
	}
}
