package otelkeel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/harness/harnesstest"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/observe/otelkeel"
	"github.com/keelrun/keel/internal/observe/otelkeel/otlptest"
)

// vault is a read-only tool holding a credential from its constructor
// (tool.SecretHolder) and using it on every call; on account acct-2 it
// fails with an error that carries it, as net/http's would.
type vault struct{ apiKey string }

func (v vault) Info() tool.Info {
	return tool.Info{Name: "vault", Mode: run.ModeSafeReadonly, Description: "reads the balance",
		Schema: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"}},"required":["account"]}`)}
}

// Secrets names the credential (tool.SecretHolder).
func (v vault) Secrets() []string { return []string{v.apiKey} }

func (v vault) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	if strings.Contains(string(c.Args), "acct-2") {
		return tool.Result{}, &url.Error{Op: "Get", URL: "https://bank.example/balance?key=" + v.apiKey, Err: errors.New("connection refused")}
	}
	c.Progress(1, 2, "authenticated")
	c.Progress(2, 2, "read")
	return tool.Result{Content: "balance 42", Data: json.RawMessage(`{"balance":42}`)}, nil
}

// TestTelemetryOverTheWire runs a run of two Steps of the kernel's harness
// (an approval between them; harnesstest's store, scripted model and
// ledger) with the OTLP exporters pointed at a real OTLP/HTTP receiver, and
// checks what arrived: the GenAI span names and attributes, one trace for
// the run with both Steps children of its stored trace context, Keel's
// own spans, the metrics — and that the tool's credential, planted as a
// canary, is on no span even with content capture on.
func TestTelemetryOverTheWire(t *testing.T) {
	for _, capture := range []bool{false, true} {
		name := "capture_off"
		if capture {
			name = "capture_on"
		}
		t.Run(name, func(t *testing.T) { testTelemetry(t, capture) })
	}
}

func testTelemetry(t *testing.T, capture bool) {
	const credCanary = "canary-otel-cred-3f9e0a7d21"
	rcv := otlptest.New(t)
	prov, err := otelkeel.Setup(t.Context(), config.OTel{TracesURL: rcv.URL() + "/v1/traces", MetricsURL: rcv.URL() + "/v1/metrics",
		CaptureContent: capture}, otelkeel.Process{Role: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Shutdown(context.Background())
	e := harnesstest.NewEnv(t)
	v := vault{apiKey: "key:" + credCanary}
	n := harnesstest.Note{Mode: run.ModeMutating, To: harnesstest.NewLedger("ledger", harnesstest.LedgerOptions{Lookup: true, Idempotent: true})}
	script := `{"turns":[{"tool_calls":[{"name":"vault","args":{"account":"acct-1"}}]},` +
		`{"tool_calls":[{"name":"vault","args":{"account":"acct-2"}}]},` +
		`{"tool_calls":[{"name":"note","args":{"text":"the balance is 42"}}]},{"text":"done"}]}`
	reg, err := tool.NewRegistry(v, n)
	if err != nil {
		t.Fatal(err)
	}
	agents := harness.AgentMap{"a": {Name: "a", Model: e.Scripted(script), Tools: reg, MaxTokens: 100, Provider: "keel.scripted", ModelName: "scripted"}}
	h := e.Harness(nil, agents, func(o *harness.Options) { o.Telemetry = prov.Telemetry() })
	r := e.CreateRun("a", "ses_otel", func(r *run.Run) { r.TraceParent = run.NewTraceParent() })
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextApproval {
		t.Fatalf("%+v", d)
	}
	e.Decide(r.ID, e.PendingApproval(r.ID), true)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("%+v", d)
	}
	if err := prov.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if bad := rcv.Refused(); len(bad) > 0 {
		t.Fatalf("receiver refused exports: %v", bad)
	}
	t.Logf("spans received: %v; metrics: %v", names(rcv.Spans()), rcv.MetricNames())
	parts := strings.Split(r.TraceParent, "-")
	traceID, rootID := parts[1], parts[2]

	steps := rcv.Named("invoke_agent a")
	if len(steps) < 2 {
		t.Fatalf("invoke_agent spans = %d, want one per Step (at least 2); got %v", len(steps), names(rcv.Spans()))
	}
	stepIDs := map[string]bool{}
	for _, s := range steps {
		stepIDs[s.SpanID] = true
		if s.TraceID != traceID || s.ParentSpanID != rootID {
			t.Errorf("Step span in trace %s under %s, want trace %s under the run's %s", s.TraceID, s.ParentSpanID, traceID, rootID)
		}
		wantAttrs(t, s, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
			"gen_ai.conversation.id": "ses_otel", "keel.run.id": r.ID, "gen_ai.provider.name": "keel.scripted"})
	}
	for _, s := range rcv.Spans() {
		if s.TraceID != traceID {
			t.Errorf("span %q is in trace %s, not the run's %s", s.Name, s.TraceID, traceID)
		}
	}
	roots := rcv.Named("keel.run a")
	if len(roots) != 1 || roots[0].SpanID != rootID || roots[0].ParentSpanID != "" {
		t.Fatalf("run root spans = %+v, want one with span id %s and no parent", roots, rootID)
	}
	wantAttrs(t, roots[0], map[string]any{"keel.status": "completed", "keel.run.id": r.ID})

	chats := rcv.Named("chat scripted")
	if len(chats) < 4 {
		t.Fatalf("chat spans = %d, want one per model call (4)", len(chats))
	}
	for _, c := range chats {
		if !stepIDs[c.ParentSpanID] || c.Kind != "SPAN_KIND_CLIENT" {
			t.Errorf("chat span parent %s kind %s, want a Step's child, client", c.ParentSpanID, c.Kind)
		}
		wantAttrs(t, c, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted", "keel.run.id": r.ID})
		for _, k := range []string{"gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
			if _, ok := c.Attrs[k]; !ok {
				t.Errorf("chat span lacks %s: %v", k, c.Attrs)
			}
		}
		if _, ok := c.Attrs["gen_ai.input.messages"]; ok != capture {
			t.Errorf("chat span has gen_ai.input.messages = %v, capture %v", ok, capture)
		}
	}
	vaults := rcv.Named("execute_tool vault")
	if len(vaults) != 2 {
		t.Fatalf("execute_tool vault spans = %d, want 2", len(vaults))
	}
	failed := 0
	for _, s := range vaults {
		wantAttrs(t, s, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "vault"})
		if s.Attrs["gen_ai.tool.call.id"] == "" || s.Attrs["gen_ai.tool.call.id"] == nil {
			t.Errorf("execute_tool without gen_ai.tool.call.id: %v", s.Attrs)
		}
		if s.StatusCode == "STATUS_CODE_ERROR" {
			failed++
			if !strings.Contains(s.StatusMsg, "[redacted]") {
				t.Errorf("failed tool span status %q: want the error with its secret redacted", s.StatusMsg)
			}
		}
	}
	if failed != 1 {
		t.Errorf("failed vault spans = %d, want 1 (acct-2)", failed)
	}
	notes := rcv.Named("execute_tool note")
	if len(notes) != 1 || notes[0].Attrs["keel.operation.id"] == nil {
		t.Fatalf("execute_tool note = %+v, want one with keel.operation.id", notes)
	}
	disp := rcv.Named("keel.operation.dispatch note")
	if len(disp) != 1 || disp[0].ParentSpanID != notes[0].SpanID || disp[0].Attrs["keel.outcome"] != "dispatched" {
		t.Fatalf("dispatch spans = %+v, want one child of execute_tool note, dispatched", disp)
	}
	if w := rcv.Named("keel.approval.wait note"); len(w) != 1 || w[0].Attrs["keel.status"] != "approved" {
		t.Fatalf("approval wait spans = %+v, want one, approved", w)
	}
	if l := rcv.Named("keel.lease.acquire"); len(l) < 2 {
		t.Fatalf("lease spans = %d, want one per Step", len(l))
	}

	for _, m := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "keel.steps", "keel.tool.duration",
		"keel.approvals.waiting", "keel.runs.finished"} {
		if len(rcv.MetricPoints(m)) == 0 {
			t.Errorf("metric %s not received; got %v", m, rcv.MetricNames())
		}
	}
	types := map[any]bool{}
	for _, p := range rcv.MetricPoints("gen_ai.client.token.usage") {
		types[p["gen_ai.token.type"]] = true
	}
	if !types["input"] || !types["output"] {
		t.Errorf("token usage by gen_ai.token.type = %v, want input and output", types)
	}
	finished := false
	for _, p := range rcv.MetricPoints("keel.runs.finished") {
		finished = finished || (p["keel.status"] == "completed" && p["_value"] == int64(1))
	}
	if !finished {
		t.Errorf("keel.runs.finished = %v, want 1 completed", rcv.MetricPoints("keel.runs.finished"))
	}
	for i, b := range rcv.Payloads() {
		if bytes.Contains(b, []byte(credCanary)) {
			t.Errorf("payload %d carries the tool's credential", i)
		}
	}
}

func wantAttrs(t *testing.T, s otlptest.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if s.Attrs[k] != v {
			t.Errorf("span %q: %s = %v, want %v", s.Name, k, s.Attrs[k], v)
		}
	}
}

func names(spans []otlptest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
