package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// GenAISemconv is the revision of the OpenTelemetry GenAI semantic
// conventions (status Development) whose span names and attributes
// trace.json follows.
const GenAISemconv = "v1.38.0"

// Trace is trace.json: the run's spans in the OTLP/JSON encoding
// (ExportTraceServiceRequest, as an OTLP/HTTP JSON exporter would post
// it), so any tool that reads OTLP JSON opens it.
type Trace struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
}

// ResourceSpans is the OTLP/JSON resourceSpans element.
type ResourceSpans struct {
	Resource struct {
		Attributes []KeyValue `json:"attributes"`
	} `json:"resource"`
	ScopeSpans []ScopeSpans `json:"scopeSpans"`
}

// ScopeSpans is the OTLP/JSON scopeSpans element.
type ScopeSpans struct {
	Scope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	} `json:"scope"`
	SchemaURL string `json:"schemaUrl,omitempty"`
	Spans     []Span `json:"spans"`
}

// Span is one OTLP/JSON span. Times are Unix nanoseconds as decimal
// strings (the encoding's rule for 64-bit integers).
type Span struct {
	TraceID      string     `json:"traceId"`
	SpanID       string     `json:"spanId"`
	ParentSpanID string     `json:"parentSpanId,omitempty"`
	Name         string     `json:"name"`
	Kind         int        `json:"kind"`
	Start        string     `json:"startTimeUnixNano"`
	End          string     `json:"endTimeUnixNano"`
	Attributes   []KeyValue `json:"attributes"`
	Status       SpanStatus `json:"status"`
}

// SpanStatus is the OTLP status: code 0 unset, 1 ok, 2 error.
type SpanStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

// KeyValue is an OTLP attribute.
type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue holds one of a string, an int (OTLP/JSON encodes int64 as a
// string) or an array of them.
type AnyValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	IntValue    *string     `json:"intValue,omitempty"`
	ArrayValue  *ArrayValue `json:"arrayValue,omitempty"`
}

// ArrayValue is an OTLP array attribute value.
type ArrayValue struct {
	Values []AnyValue `json:"values"`
}

// Span kinds of OTLP.
const (
	kindInternal = 1
	kindClient   = 3
)

func str(k, v string) KeyValue { return KeyValue{Key: k, Value: AnyValue{StringValue: &v}} }
func num(k string, v int64) KeyValue {
	s := strconv.FormatInt(v, 10)
	return KeyValue{Key: k, Value: AnyValue{IntValue: &s}}
}

// TraceID is the run's trace id: the one of the W3C traceparent stored
// with the run when there is one, so that trace.json and the live OTLP
// trace are one trace; otherwise derived from the run id, so the same run
// always gets the same id and trace.json rebuilt twice is the same trace.
func TraceID(r run.Run) string {
	if tid, ok := traceIDOf(traceParentOf(r)); ok {
		return tid
	}
	h := sha256.Sum256([]byte("keel-trace:" + r.ID))
	return hex.EncodeToString(h[:16])
}

// traceParentOf is the run's stored W3C traceparent ("" for a run made
// before runs carried one).
func traceParentOf(r run.Run) string { return r.TraceParent }

// rootSpanID is the id of the run's root span: the parent id of the stored
// traceparent, which is the id the live root span "keel.run {agent}" is
// exported with, so the file's tree and the live one have the same root.
func rootSpanID(r run.Run) string {
	parts := strings.Split(r.TraceParent, "-")
	if _, ok := traceIDOf(r.TraceParent); ok && len(parts[2]) == 16 && strings.Trim(parts[2], "0") != "" {
		return parts[2]
	}
	return spanID(r.ID, "run", "")
}

// traceIDOf takes the trace id of a W3C traceparent
// ("00-<32 hex>-<16 hex>-<2 hex>"); false for anything else or an
// all-zero id.
func traceIDOf(tp string) (string, bool) {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[0]) != 2 || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return "", false
	}
	if _, err := hex.DecodeString(parts[1]); err != nil || strings.Trim(parts[1], "0") == "" || strings.ToLower(parts[1]) != parts[1] {
		return "", false
	}
	return parts[1], true
}

func spanID(runID, kind, key string) string {
	h := sha256.Sum256([]byte(runID + "\x00" + kind + "\x00" + key))
	return hex.EncodeToString(h[:8])
}

func nanos(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

// BuildTrace rebuilds the run's spans from its records: a root span for
// the run, `invoke_agent {agent}` per Step, `chat {model}` per model call
// and `execute_tool {tool}` per tool call under their Step, and Keel's
// `keel.operation {tool}` (intent to outcome) and `keel.approval_wait
// {tool}` (request to decision, across Steps) spans. Attributes follow the
// GenAI conventions ([GenAISemconv]); no prompt, answer or argument
// content is captured, only names, counts, hashes and ids.
func BuildTrace(b Bundle, tl Timeline, env Env) Trace {
	r := b.Run
	tid := TraceID(r)
	provider := env.Provider(r.Agent)
	root := rootSpanID(r)
	end := r.UpdatedAt
	if len(b.Events) > 0 && b.Events[len(b.Events)-1].Time.After(end) {
		end = b.Events[len(b.Events)-1].Time
	}
	runIDAttr := str("keel.run.id", r.ID)
	spans := []Span{{TraceID: tid, SpanID: root, Name: "keel.run " + r.Agent, Kind: kindInternal, Start: nanos(r.CreatedAt), End: nanos(end),
		Attributes: []KeyValue{runIDAttr, str("gen_ai.agent.name", r.Agent), str("gen_ai.conversation.id", r.SessionID),
			str("keel.run.status", string(r.Status)), num("keel.run.steps", r.StepCount),
			num("keel.budget.tokens_used", r.Budget.TokensUsed), num("keel.budget.spend_used_micro_usd", r.Budget.SpendUsedMicroUSD)},
		Status: statusOf(string(r.Status), r.Error)}}
	stepIDs := make([]string, len(tl.Steps))
	for i, s := range tl.Steps {
		stepIDs[i] = spanID(r.ID, "step", strconv.Itoa(i))
		spans = append(spans, Span{TraceID: tid, SpanID: stepIDs[i], ParentSpanID: root, Name: "invoke_agent " + r.Agent, Kind: kindInternal,
			Start: nanos(s.Start), End: nanos(s.End), Attributes: []KeyValue{str("gen_ai.operation.name", "invoke_agent"),
				str("gen_ai.agent.name", r.Agent), str("gen_ai.conversation.id", r.SessionID), runIDAttr,
				num("keel.step.index", int64(i)), str("keel.worker", s.Owner)}})
	}
	parentOf := func(step int) string {
		if step >= 0 && step < len(stepIDs) {
			return stepIDs[step]
		}
		return root
	}
	for i, m := range tl.Models {
		name := "chat"
		if m.Model != "" {
			name += " " + m.Model
		}
		at := chatAttributes(r, m, env, provider, runIDAttr)
		spans = append(spans, Span{TraceID: tid, SpanID: spanID(r.ID, "chat", strconv.Itoa(i)), ParentSpanID: parentOf(m.Step),
			Name: name, Kind: kindClient, Start: nanos(m.Start), End: nanos(m.End), Attributes: at, Status: statusOf(m.Status, m.Error)})
	}
	for _, c := range tl.Tools {
		at := toolAttributes(c, runIDAttr)
		spans = append(spans, Span{TraceID: tid, SpanID: spanID(r.ID, "tool", c.PlanItemID), ParentSpanID: parentOf(c.Step),
			Name: "execute_tool " + c.Tool, Kind: kindInternal, Start: nanos(c.Start), End: nanos(c.End), Attributes: at,
			Status: statusOf(c.Status, c.Error)})
	}
	for _, op := range tl.Ops {
		spans = append(spans, Span{TraceID: tid, SpanID: spanID(r.ID, "op", op.OperationID), ParentSpanID: parentOf(op.Step),
			Name: "keel.operation " + op.Tool, Kind: kindClient, Start: nanos(op.Start), End: nanos(op.End),
			Attributes: []KeyValue{runIDAttr, str("keel.operation.id", op.OperationID), str("gen_ai.tool.name", op.Tool),
				str("keel.operation.destination", op.Destination), str("keel.operation.contract", op.Contract),
				str("keel.operation.status", op.Status), num("keel.operation.uncertain", int64(op.Uncertain))},
			Status: statusOf(op.Status, op.Reason)})
	}
	for _, ap := range tl.Approvals {
		at := []KeyValue{runIDAttr, str("keel.approval.id", ap.ApprovalID), str("gen_ai.tool.name", ap.Tool),
			str("keel.approval.mode", ap.Mode), str("keel.approval.args_hash", ap.ArgsHash), str("keel.approval.status", ap.Status)}
		apEnd := ap.End
		if apEnd.IsZero() {
			apEnd = end // still waiting when the bundle was written
		}
		spans = append(spans, Span{TraceID: tid, SpanID: spanID(r.ID, "approval", ap.ApprovalID), ParentSpanID: root,
			Name: "keel.approval_wait " + ap.Tool, Kind: kindInternal, Start: nanos(ap.Start), End: nanos(apEnd), Attributes: at})
	}
	return traceOf(spans, env)
}

// chatAttributes are the GenAI attributes of model call m's chat span:
// those the record does not know (provider, response model) are left out.
func chatAttributes(r run.Run, m ModelCall, env Env, provider string, runIDAttr KeyValue) []KeyValue {
	at := []KeyValue{str("gen_ai.operation.name", "chat"), str("gen_ai.agent.name", r.Agent), runIDAttr,
		str("gen_ai.conversation.id", r.SessionID)}
	if provider != "" {
		at = append(at, str("gen_ai.provider.name", provider))
	}
	if rm := env.RequestModel(r.Agent); rm != "" {
		at = append(at, str("gen_ai.request.model", rm))
	}
	if m.Model != "" {
		at = append(at, str("gen_ai.response.model", m.Model))
	}
	if m.ResponseID != "" {
		at = append(at, str("gen_ai.response.id", m.ResponseID))
	}
	if m.StopReason != "" {
		reason := m.StopReason
		at = append(at, KeyValue{Key: "gen_ai.response.finish_reasons", Value: AnyValue{ArrayValue: &ArrayValue{Values: []AnyValue{{StringValue: &reason}}}}})
	}
	return append(at, num("gen_ai.usage.input_tokens", m.InputTokens), num("gen_ai.usage.output_tokens", m.OutputTokens),
		num("keel.cost_micro_usd", m.CostMicroUSD), num("keel.retried_attempts", int64(m.Retried)))
}

// toolAttributes are the attributes of tool call c's execute_tool span.
func toolAttributes(c ToolCall, runIDAttr KeyValue) []KeyValue {
	at := []KeyValue{str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", c.Tool), runIDAttr,
		str("keel.plan_item.id", c.PlanItemID), str("keel.tool.input_hash", c.InputHash), str("keel.tool.status", c.Status)}
	if c.CallID != "" {
		at = append(at, str("gen_ai.tool.call.id", c.CallID))
	}
	if c.OperationID != "" {
		at = append(at, str("keel.operation.id", c.OperationID))
	}
	return at
}

// traceOf wraps spans in the OTLP resource (service keel at env.Version)
// and the instrumentation scope of this package.
func traceOf(spans []Span, env Env) Trace {
	rs := ResourceSpans{}
	rs.Resource.Attributes = []KeyValue{str("service.name", "keel"), str("service.version", env.Version)}
	ss := ScopeSpans{SchemaURL: "https://opentelemetry.io/schemas/" + strings.TrimPrefix(GenAISemconv, "v"), Spans: spans}
	ss.Scope.Name = "github.com/keelrun/keel/internal/observe/telemetry"
	ss.Scope.Version = env.Version
	rs.ScopeSpans = []ScopeSpans{ss}
	return Trace{ResourceSpans: []ResourceSpans{rs}}
}

// statusOf maps a record's status to the span's: errors carry their
// message (tool and model errors are already redacted of secrets).
func statusOf(status, msg string) SpanStatus {
	switch status {
	case "completed", "succeeded", "reconciled", "approved":
		return SpanStatus{Code: 1}
	case "failed", "not_dispatched", "needs_human", "cancelled":
		return SpanStatus{Code: 2, Message: msg}
	}
	return SpanStatus{}
}
