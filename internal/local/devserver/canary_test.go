package devserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/local/devserver"
	"github.com/keelrun/keel/internal/observe/otelkeel/otlptest"
	"github.com/keelrun/keel/internal/observe/telemetry"
	"github.com/keelrun/keel/internal/scrub"
)

// lockedBuffer is a log destination written by many goroutines.
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

// TestSecretCanaries is item 1 of issue #32: a canary secret value in
// each place configuration may hold one — an OTLP header, the password of
// the OTLP endpoint's URL, the password of a provider base URL, a
// provider API key, AWS credentials, the dev token — appears in none of
// keel dev's outputs: the debug bundle (every file, env.txt included),
// GET /v1/deployment and the doctor text it carries, the run data the
// viewer reads (run, events, explain), the logs and the exported spans.
// Each canary is also put into a run's input and logged with the whole
// configuration, so each output had the chance to leak it. The API
// refuses that input (secret_in_request: masking a caller's own text is an
// oracle), so the run is stored before keel dev starts, as a run created
// before that refusal, or by a schedule, would be; the sweep at start
// starts it.
func TestSecretCanaries(t *testing.T) {
	ctx := context.Background()
	canaries := map[string]string{
		"otlp header":       "hdr-canary-6b1f0e2a",
		"otlp url password": "otlp-pass-canary-91d3",
		"base url password": "base-pass-canary-5c77",
		"api key":           "sk-ant-key-canary-0a9e4d",
		"aws secret key":    "aws-secret-canary-2f8b",
		"dev token":         "dev-token-canary-7e3c1b9a5d",
	}
	recv := otlptest.New(t)
	otlp, _ := url.Parse(recv.URL())
	otlp.User = url.UserPassword("collector", canaries["otlp url password"])
	dir := t.TempDir()
	env := map[string]string{
		"KEEL_DATA_DIR":                                      "" + dir,
		"OTEL_EXPORTER_OTLP_ENDPOINT":                        otlp.String(),
		"OTEL_EXPORTER_OTLP_HEADERS":                         "x-auth=" + url.QueryEscape(canaries["otlp header"]),
		"OTEL_BSP_SCHEDULE_DELAY":                            "10",
		"ANTHROPIC_API_KEY":                                  canaries["api key"],
		"ANTHROPIC_BASE_URL":                                 "https://proxy:" + canaries["base url password"] + "@llm.example",
		"AWS_SECRET_ACCESS_KEY":                              canaries["aws secret key"],
		"OTEL_TRACES_SAMPLER":                                "always_on",
		"OTEL_SERVICE_NAME":                                  "canary",
		"OTEL_METRIC_EXPORT_INTERVAL":                        "600000",
		"OTEL_EXPORTER_OTLP_PROTOCOL":                        "http/protobuf",
		"KEEL_LOG_LEVEL":                                     "debug",
		"OTEL_RESOURCE_ATTRIBUTES":                           "deployment.environment=test",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
	}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	log := cfg.Logger(logs)
	rt, err := compose.Open(ctx, cfg.Defaults(), fixturetest.App(fixture.DirPublisher{Dir: filepath.Join(dir, "published")}),
		compose.Backends{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	all := make([]string, 0, len(canaries))
	for _, c := range canaries {
		all = append(all, c)
	}
	input := "remember " + strings.Join(all, " ")
	stored, _, err := rt.Store.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "dev", Agent: fixture.AgentName,
		Request: input, InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt, Logger: log,
		Token: canaries["dev token"], TaskCommand: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// A careless log line: the whole configuration, and each canary.
	rt.Logger.Info("configuration", "config", fmt.Sprintf("%+v", cfg), "canaries", strings.Join(all, " "))

	get := func(path string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token)
		code, body := do(t, req)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		return body
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/runs",
		strings.NewReader(`{"agent":"research","input":"`+input+`"}`))
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	req.Header.Set("Content-Type", "application/json")
	code, body := do(t, req)
	if code != http.StatusBadRequest || !strings.Contains(body, `"secret_in_request"`) || strings.Contains(body, scrub.Mask) {
		t.Fatalf("create with the canaries in its input: %d %s", code, body)
	}
	runID := stored.ID
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(get("/v1/runs/"+runID), "awaiting_approval"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) { // a bound against hanging, not a timing assertion
			t.Fatal("the run never reached its approval")
		}
	}
	if err := rt.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	outputs := map[string]string{
		"GET /v1/deployment (doctor)": get("/v1/deployment"),
		"GET /v1/runs/{id}":           get("/v1/runs/" + runID),
		"GET /v1/runs/{id}/events":    get("/v1/runs/" + runID + "/events"),
		"GET /v1/runs/{id}/explain":   get("/v1/runs/" + runID + "/explain"),
		"GET /v1/runs":                get("/v1/runs"),
	}
	files, err := telemetry.ReadArchive([]byte(get("/v1/runs/" + runID + "/bundle")))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		outputs["bundle "+name] = string(data)
	}
	var spans bytes.Buffer
	for _, p := range recv.Payloads() {
		spans.Write(p)
	}
	outputs["exported spans"] = spans.String()
	outputs["logs"] = logs.String()

	for what, text := range outputs {
		for name, c := range canaries {
			if strings.Contains(text, c) {
				t.Errorf("%s shows the %s canary", what, name)
			}
		}
	}
	// Each output had the canaries to leak: they were masked, not absent.
	for _, what := range []string{"bundle env.txt", "bundle last_state.json", "GET /v1/runs/{id}", "GET /v1/deployment (doctor)", "exported spans", "logs"} {
		if !strings.Contains(outputs[what], scrub.Mask) {
			t.Errorf("%s masks nothing: the test did not reach it", what)
		}
	}
	if !strings.Contains(outputs["bundle env.txt"], "OTel.TraceHeaders=map[x-auth:"+scrub.Mask+"]") {
		t.Errorf("env.txt:\n%s", outputs["bundle env.txt"])
	}
	if !strings.Contains(outputs["GET /v1/deployment (doctor)"], "live spans are exported to") {
		t.Errorf("the deployment does not name its OTLP endpoint: %s", outputs["GET /v1/deployment (doctor)"])
	}
}
