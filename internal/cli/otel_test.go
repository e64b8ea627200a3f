package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/observe/otelkeel/otlptest"
	"github.com/keelrun/keel/keeltest"
)

// TestDevTraceAcrossRestart is issue 14's first Done-when: a research run
// under `keel dev` with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a real
// OTLP/HTTP receiver, keel dev SIGKILLed while the run waits for its
// approval, started again, killed again by a fault point right after the
// publication was dispatched, and started a third time, yields one trace:
// the Steps of every process that lived to export them are children of
// the run's one root, the third reconciles the publication, and the
// receiver decodes the GenAI attributes from the wire.
func TestDevTraceAcrossRestart(t *testing.T) {
	t.Parallel()
	bin, _ := binaries(t)
	pubURL := pubserver(t)
	rcv := otlptest.New(t)
	env := []string{"KEEL_MODEL=scripted:" + researchScript, "RESEARCH_PUBLISH=" + pubURL,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL(), "OTEL_SERVICE_NAME=keel-otel-test", "OTEL_METRIC_EXPORT_INTERVAL=500", "OTEL_BSP_SCHEDULE_DELAY=200"}
	p := keeltest.StartProgram(t, bin, env...)
	id := p.StartRun(t, "research", "Write a short report on durable agents and publish it.")
	ap := p.WaitApproval(t, id)
	// The first process's Steps are exported (the batch's delay) before
	// it dies: wait for them, then kill it mid-run.
	first := waitSpans(t, rcv, func(s otlptest.Span) bool { return s.Name == "invoke_agent research" }, p)
	waitMetric(t, rcv, "keel.tool.duration", p)
	p.Kill(t)
	p.Restart(t, append([]string{"KEEL_FAULTPOINT=after_dispatch"}, env...)...)
	p.Approve(t, id, ap)
	p.WaitExit(t) // the fault point's SIGKILL, the publication sent and not recorded
	p.Restart(t, env...)
	p.WaitFor(t, id, "completed")
	root := waitSpans(t, rcv, func(s otlptest.Span) bool { return s.Name == "keel.run research" }, p)[0]
	if bad := rcv.Refused(); len(bad) > 0 {
		t.Fatalf("receiver refused exports: %v", bad)
	}

	if root.ParentSpanID != "" || root.Attrs["keel.run.id"] != id || root.Attrs["keel.status"] != "completed" {
		t.Fatalf("run root span %+v", root)
	}
	steps := rcv.Named("invoke_agent research")
	owners := map[any]bool{}
	for _, s := range steps {
		owners[s.Attrs["keel.lease.owner"]] = true
		if s.TraceID != root.TraceID || s.ParentSpanID != root.SpanID {
			t.Errorf("Step span (owner %v) in trace %s under %s, want trace %s under the run's root %s",
				s.Attrs["keel.lease.owner"], s.TraceID, s.ParentSpanID, root.TraceID, root.SpanID)
		}
		for k, v := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "research",
			"keel.run.id": id, "gen_ai.provider.name": "keel.scripted", "gen_ai.request.model": "scripted"} {
			if s.Attrs[k] != v {
				t.Errorf("Step span: %s = %v, want %v", k, s.Attrs[k], v)
			}
		}
		if s.Resource["service.name"] != "keel-otel-test" {
			t.Errorf("resource service.name = %v", s.Resource["service.name"])
		}
	}
	if len(owners) < 2 || len(first) == 0 {
		t.Fatalf("Step spans from %d processes (%v), want both keel dev processes", len(owners), owners)
	}
	stepIDs := map[string]bool{}
	for _, s := range steps {
		stepIDs[s.SpanID] = true
	}
	var chats, tools, dispatched int
	// The third keel dev ended the lease the killed one held mid-Step: a
	// span of that process, not of any run.
	if tk := rcv.Named("keel.lease.takeover"); len(tk) != 1 || tk[0].Attrs["keel.lease.taken_over"] != int64(1) {
		t.Errorf("lease takeover spans %+v, want one ending 1 lease", tk)
	}
	for _, s := range rcv.Spans() {
		if s.Name == "keel.lease.takeover" {
			continue
		}
		if s.TraceID != root.TraceID {
			t.Errorf("span %q is in trace %s, not the run's %s", s.Name, s.TraceID, root.TraceID)
		}
		switch {
		case strings.HasPrefix(s.Name, "chat "):
			chats++
			if !stepIDs[s.ParentSpanID] || s.Attrs["gen_ai.operation.name"] != "chat" || s.Attrs["gen_ai.usage.output_tokens"] == nil {
				t.Errorf("chat span %+v", s)
			}
		case strings.HasPrefix(s.Name, "execute_tool "):
			tools++
			if !stepIDs[s.ParentSpanID] || s.Attrs["gen_ai.tool.name"] != strings.TrimPrefix(s.Name, "execute_tool ") || s.Attrs["gen_ai.tool.call.id"] == nil {
				t.Errorf("execute_tool span %+v", s)
			}
		case strings.HasPrefix(s.Name, "keel.operation.dispatch "):
			dispatched++
			if s.Attrs["keel.operation.id"] == nil {
				t.Errorf("dispatch span without keel.operation.id: %+v", s)
			}
		}
	}
	rec := rcv.Named("keel.operation.reconcile publish_report")
	if chats == 0 || tools == 0 || len(rec) != 1 || !stepIDs[rec[0].ParentSpanID] || rec[0].Attrs["keel.operation.id"] == nil {
		t.Fatalf("spans: %d chat, %d execute_tool, reconcile %+v; all: %v", chats, tools, rec, spanNames(rcv.Spans()))
	}
	if o := rec[0].Attrs["keel.outcome"]; o != "found" && o != "redispatched" {
		t.Fatalf("reconcile outcome %v, want found or redispatched", o)
	}
	_ = dispatched // the dispatching process was killed before its batch left: the span may be lost with it
	waitMetric(t, rcv, "keel.runs.finished", p)
	waitMetric(t, rcv, "keel.reconciliations", p)
	for _, m := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "keel.steps", "keel.tool.duration"} {
		if len(rcv.MetricPoints(m)) == 0 {
			t.Errorf("metric %s not received; got %v", m, rcv.MetricNames())
		}
	}
}

// waitSpans polls the receiver until a span matches (exports are
// batched), failing after keeltest.HangGuard.
func waitSpans(t *testing.T, rcv *otlptest.Receiver, match func(otlptest.Span) bool, p *keeltest.Program) []otlptest.Span {
	t.Helper()
	for deadline := time.Now().Add(keeltest.HangGuard); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var out []otlptest.Span
		for _, s := range rcv.Spans() {
			if match(s) {
				out = append(out, s)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	t.Fatalf("span not received; got %v\n%s", spanNames(rcv.Spans()), p.Output())
	return nil
}

func waitMetric(t *testing.T, rcv *otlptest.Receiver, name string, p *keeltest.Program) {
	t.Helper()
	for deadline := time.Now().Add(keeltest.HangGuard); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(rcv.MetricPoints(name)) > 0 {
			return
		}
	}
	t.Fatalf("metric %s not received; got %v\n%s", name, rcv.MetricNames(), p.Output())
}

func spanNames(spans []otlptest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
