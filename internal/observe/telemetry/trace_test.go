package telemetry_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/observe/telemetry"
)

// fixture reads a run recorded by the real harness (internal/observe/explain's
// generator test writes them: go test ./internal/observe/explain -update).
func fixture(t testing.TB, kind string) telemetry.Bundle {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "explain", "testdata", kind+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var b telemetry.Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTraceOfRecordedRuns(t *testing.T) {
	env := telemetry.Env{Version: "v1", Models: map[string]string{"builder": "anthropic:claude-x"}}
	for _, tc := range []struct {
		kind    string
		names   map[string]int
		secrets []string // argument content that must not be captured
		csvRows int
	}{
		{"budget_exceeded", map[string]int{"invoke_agent builder": 2, "chat scripted": 5, "execute_tool run_tests": 3, "execute_tool search": 1}, []string{"./..."}, 4},
		{"needs_human", map[string]int{"invoke_agent builder": 3, "chat scripted": 1, "execute_tool publish": 1, "keel.operation publish": 1, "keel.approval_wait publish": 1},
			[]string{"release notes"}, 1},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			b := fixture(t, tc.kind)
			tl := telemetry.Rebuild(b)
			tr := telemetry.BuildTrace(b, tl, env)
			spans := tr.ResourceSpans[0].ScopeSpans[0].Spans
			byID := map[string]telemetry.Span{}
			got := map[string]int{}
			for _, s := range spans {
				byID[s.SpanID] = s
				got[s.Name]++
				if s.TraceID != telemetry.TraceID(b.Run) {
					t.Fatalf("span %s in trace %s", s.Name, s.TraceID)
				}
			}
			for name, n := range tc.names {
				if got[name] != n {
					t.Errorf("%d spans %q, want %d (have %v)", got[name], name, n, got)
				}
			}
			for _, s := range spans {
				attrs := map[string]string{}
				for _, kv := range s.Attributes {
					switch {
					case kv.Value.StringValue != nil:
						attrs[kv.Key] = *kv.Value.StringValue
					case kv.Value.IntValue != nil:
						attrs[kv.Key] = *kv.Value.IntValue
					default:
						attrs[kv.Key] = *kv.Value.ArrayValue.Values[0].StringValue
					}
				}
				parent := byID[s.ParentSpanID]
				switch {
				case strings.HasPrefix(s.Name, "chat "):
					if attrs["gen_ai.provider.name"] != "anthropic" || attrs["gen_ai.request.model"] != "claude-x" ||
						attrs["gen_ai.response.model"] != "scripted" || attrs["gen_ai.usage.input_tokens"] == "" || attrs["gen_ai.conversation.id"] != "s1" ||
						attrs["gen_ai.response.finish_reasons"] == "" {
						t.Errorf("chat attributes %v", attrs)
					}
					if !strings.HasPrefix(parent.Name, "invoke_agent ") {
						t.Errorf("chat's parent is %q", parent.Name)
					}
				case strings.HasPrefix(s.Name, "execute_tool "):
					if attrs["gen_ai.tool.name"] == "" || attrs["gen_ai.tool.call.id"] == "" || attrs["keel.tool.input_hash"] == "" ||
						!strings.HasPrefix(parent.Name, "invoke_agent ") || s.End < s.Start {
						t.Errorf("tool span %s %v under %q", s.Name, attrs, parent.Name)
					}
				case strings.HasPrefix(s.Name, "invoke_agent "):
					if attrs["gen_ai.agent.name"] != "builder" || attrs["keel.run.id"] != b.Run.ID || !strings.HasPrefix(parent.Name, "keel.run ") {
						t.Errorf("step attributes %v under %q", attrs, parent.Name)
					}
				}
			}
			data, _ := json.Marshal(tr)
			for _, s := range tc.secrets {
				if strings.Contains(string(data), s) {
					t.Errorf("trace.json captures argument content %q", s)
				}
			}
			rows, err := csv.NewReader(strings.NewReader(string(must(telemetry.ToolCallsCSV(tl))))).ReadAll()
			if err != nil || len(rows) != tc.csvRows+1 {
				t.Fatalf("tool_calls.csv: %d rows, %v", len(rows), err)
			}
			for _, r := range rows[1:] {
				if r[2] == "" || r[4] == "" {
					t.Errorf("row %q", r)
				}
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkArchive renders the bundle of a recorded run (go test
// -bench Archive ./internal/observe/telemetry).
func BenchmarkArchive(b *testing.B) {
	bundle := fixture(b, "budget_exceeded")
	env := telemetry.Env{Version: "v1", Commit: "c"}
	var size int
	for b.Loop() {
		data, err := telemetry.Archive(context.Background(), bundle, nil, env)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size), "bytes/bundle")
	b.ReportMetric(float64(len(bundle.Events)), "events")
}
