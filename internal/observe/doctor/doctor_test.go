package doctor_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/doctor"
)

// open builds a dev runtime of app the way keel dev does (SQLite, files).
func open(t *testing.T, app compose.App, env map[string]string) *compose.Runtime {
	t.Helper()
	dir := t.TempDir()
	vars := map[string]string{"KEEL_STORE": "sqlite:" + filepath.Join(dir, "keel.db"), "KEEL_ARTIFACTS": "fs:" + filepath.Join(dir, "artifacts"), "KEEL_DATA_DIR": dir}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	b, err := compose.LoadBackends(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := compose.Open(context.Background(), cfg, app, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// blindPost is an effect whose destination promises neither idempotency
// nor lookup: a crash mid-dispatch needs a person.
type blindPost struct{}

func (blindPost) Info() tool.Info {
	return tool.Info{Name: "post_webhook", Mode: run.ModeConfirmOnce, Schema: json.RawMessage(`{"type":"object"}`)}
}
func (blindPost) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, errors.New("effect")
}
func (blindPost) Name() string           { return "https://hooks.example" }
func (blindPost) Contract() ops.Contract { return ops.Contract{} }
func (blindPost) Intent(context.Context, tool.Call) (tool.Intent, error) {
	return tool.Intent{}, nil
}
func (blindPost) Dispatch(context.Context, run.Operation) (ops.Outcome, error) {
	return ops.Outcome{}, nil
}
func (blindPost) Lookup(context.Context, run.Operation) (ops.Outcome, bool, error) {
	return ops.Outcome{}, false, nil
}
func (blindPost) Describe(run.Operation) tool.Result { return tool.Result{} }

func answers(t *testing.T, f doctor.Facts) map[int]doctor.Answer {
	t.Helper()
	as := doctor.Answers(f)
	if len(as) != 10 {
		t.Fatalf("%d answers", len(as))
	}
	out := map[int]doctor.Answer{}
	for _, a := range as {
		if a.Answer == "" || len(a.Facts) == 0 {
			t.Errorf("question %d has no answer or no fact: %+v", a.N, a)
		}
		out[a.N] = a
	}
	return out
}

func joined(a doctor.Answer) string { return strings.Join(a.Facts, "\n") }

func gapsOf(a doctor.Answer) string { return strings.Join(a.Gaps, "\n") }

func TestResearchDevDeployment(t *testing.T) {
	rt := open(t, fixturetest.App(fixture.DirPublisher{Dir: t.TempDir()}), nil)
	f := rt.Deployment("local", func(string) string { return "" })
	if f.Store.Kind != "sqlite" || f.Artifacts.Kind != "fs" || len(f.Agents) != 1 || f.Agents[0].Name != fixture.AgentName {
		t.Fatalf("facts %+v", f)
	}
	a := answers(t, f)
	for _, tc := range []struct {
		n       int
		facts   []string
		gaps    []string
		noGapOf string
	}{
		{1, []string{"KEEL_STORE resolves to sqlite:"}, nil, ""},
		{2, []string{"research/collect_documents (safe_readonly, read-only): its result was not committed, so it runs again",
			"research/publish_report → dir:", "looked up by its id, and retried with the same idempotency key",
			"keel settle RUN_ID OPERATION_ID"}, nil, "publish_report"},
		{3, nil, []string{"keel dev runs every run's tools in one process"}, ""},
		{4, []string{"research/publish_report: mutating, approved every time for its exact args_hash", "research/collect_documents: safe_readonly"}, nil, "publish_report"},
		{5, []string{"research: model scripted, credential from none (scripted model)"}, nil, ""},
		{6, []string{"research/publish_report: retried only with the same idempotency key"}, nil, ""},
		{7, []string{"research: max_steps 200, max_tool_calls 500"}, []string{"spend limit never stops a run"}, ""},
		{8, []string{"research/publish_report: op_succeeded records the external id"}, []string{"rests on the model's final answer"}, ""},
		{9, []string{"sha256-verified"}, nil, ""},
		{10, []string{"debug-bundle", "events.jsonl, checkpoints.jsonl, last_state.json, trace.json, tool_calls.csv, env.txt", "GET /v1/runs/{id}/explain", "no OTLP exporter"}, nil, ""},
	} {
		got := a[tc.n]
		for _, w := range tc.facts {
			if !strings.Contains(joined(got)+"\n"+got.Answer, w) {
				t.Errorf("Q%d lacks the fact %q:\n%s", tc.n, w, joined(got))
			}
		}
		for _, w := range tc.gaps {
			if !strings.Contains(gapsOf(got), w) {
				t.Errorf("Q%d lacks the gap %q: %q", tc.n, w, got.Gaps)
			}
		}
		if tc.noGapOf != "" && strings.Contains(gapsOf(got), tc.noGapOf) {
			t.Errorf("Q%d reports a gap for %s: %q", tc.n, tc.noGapOf, got.Gaps)
		}
	}
	text := doctor.Render(f, doctor.Answers(f))
	if !strings.Contains(text, "10. Can a failed run be explained tomorrow") || !strings.Contains(text, "GAP ") {
		t.Errorf("rendering:\n%s", text)
	}
}

func TestAToolWithoutLookupOrIdempotencyIsAGap(t *testing.T) {
	app := compose.App{Agents: []compose.AgentDef{{Name: "hooks", Model: compose.ModelChoice{Spec: "anthropic:claude-sonnet-4-5"},
		Tools: func(compose.ToolEnv) ([]tool.Tool, error) { return []tool.Tool{blindPost{}}, nil }}}}
	const key = "sk-ant-doctor-canary-0123456789"
	rt := open(t, app, map[string]string{"ANTHROPIC_API_KEY": key})
	f := rt.Deployment("aws-stepfunctions", func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}[k]
	})
	raw, _ := json.Marshal(f)
	if strings.Contains(string(raw), key) {
		t.Fatal("the deployment facts carry the API key")
	}
	a := answers(t, f)
	if g := gapsOf(a[2]); !strings.Contains(g, "hooks/post_webhook: its destination https://hooks.example promises neither idempotency nor lookup") {
		t.Errorf("Q2 gaps %q", a[2].Gaps)
	}
	if !strings.Contains(joined(a[2]), "keel settle RUN_ID OPERATION_ID") {
		t.Errorf("Q2 does not name the settle command: %q", a[2].Facts)
	}
	if !strings.Contains(joined(a[4]), "hooks/post_webhook: confirm_once, approved once per session") {
		t.Errorf("Q4 facts %q", a[4].Facts)
	}
	if !strings.Contains(joined(a[5]), "ANTHROPIC_API_KEY in the runtime's environment") {
		t.Errorf("Q5 facts %q", a[5].Facts)
	}
	if len(a[7].Gaps) != 0 || !f.Agents[0].Priced {
		t.Errorf("a priced model's spend limit is reported as a gap: %q", a[7].Gaps)
	}
	if len(a[3].Gaps) != 0 {
		t.Errorf("Q3 on AWS: %q", a[3].Gaps)
	}
	if !strings.Contains(joined(a[10]), "exported to http://127.0.0.1:4318") || !strings.Contains(joined(a[6]), "never retried") {
		t.Errorf("Q10 %q, Q6 %q", a[10].Facts, a[6].Facts)
	}
}

// webhook is blindPost at a destination whose URL carries a credential.
type webhook struct{ blindPost }

func (webhook) Name() string { return "https://deploy:s3cr3t-token@hooks.example/post" }

func TestDestinationCredentialsAreMasked(t *testing.T) {
	app := compose.App{Agents: []compose.AgentDef{{Name: "hooks", Model: compose.ModelChoice{Script: []byte(`{"turns":[]}`)},
		Tools: func(compose.ToolEnv) ([]tool.Tool, error) { return []tool.Tool{webhook{}}, nil }}}}
	f := open(t, app, nil).Deployment("local", func(string) string { return "" })
	raw, _ := json.Marshal(f)
	if strings.Contains(string(raw), "s3cr3t-token") || f.Agents[0].Tools[0].Destination != "https://****@hooks.example/post" {
		t.Fatalf("destination %q", f.Agents[0].Tools[0].Destination)
	}
}
