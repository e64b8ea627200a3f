package otelkeel

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.38.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelrun/keel/internal/kernel/span"
)

// Keel's own attribute keys.
const (
	KeyRunID        = attribute.Key("keel.run.id")
	KeyOperationID  = attribute.Key("keel.operation.id")
	KeyCheckpointID = attribute.Key("keel.checkpoint.id")
	KeyPlanItemID   = attribute.Key("keel.plan_item.id")
	KeyApprovalID   = attribute.Key("keel.approval.id")
	KeyStatus       = attribute.Key("keel.status")  // a run's or an approval's status
	KeyNext         = attribute.Key("keel.next")    // a Step's decision
	KeyOutcome      = attribute.Key("keel.outcome") // a tool call's, dispatch's or reconciliation's outcome
	KeyMode         = attribute.Key("keel.tool.mode")
	KeyDestination  = attribute.Key("keel.operation.destination")
	KeyLeaseOwner   = attribute.Key("keel.lease.owner")
	// KeyAgentVersion is the agent version (package agentver) the Step
	// ran under, on its invoke_agent span.
	KeyAgentVersion = attribute.Key("keel.agent.version")
	KeyLeaseToken   = attribute.Key("keel.lease.token")
	KeyLeasesTaken  = attribute.Key("keel.lease.taken_over")
)

// Span is one span in flight: every handle of package span. A nil *Span
// (what a nil *Telemetry starts) does nothing.
type Span struct {
	t     *Telemetry
	s     trace.Span
	start time.Time
	// what the span's metrics are recorded by
	a, b, c string
}

var (
	_ span.StepSpan = (*Span)(nil)
	_ span.ChatSpan = (*Span)(nil)
	_ span.ToolSpan = (*Span)(nil)
	_ span.OpSpan   = (*Span)(nil)
)

// Recording reports whether the span records; content is built only then.
func (sp *Span) Recording() bool { return sp != nil && sp.s.IsRecording() }

// fail marks the span failed with a (redacted) message and an error.type.
func (sp *Span) fail(errType, msg string) {
	if errType == "" {
		return
	}
	sp.s.SetAttributes(semconv.ErrorTypeKey.String(errType))
	sp.s.SetStatus(codes.Error, msg)
}

// runContext is ctx with the run's stored trace context as the remote
// parent; ctx unchanged when the run has none (created before they were
// stored), so the Step starts a trace of its own.
func runContext(ctx context.Context, traceParent string) context.Context {
	if traceParent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceParent})
}

// StartStep starts invoke_agent {agent}, a child of the run's trace
// context. The returned context carries it: every span the Step starts
// under it joins the run's trace.
func (t *Telemetry) StartStep(ctx context.Context, st span.Step) (context.Context, span.StepSpan) {
	if t == nil {
		return ctx, (*Span)(nil)
	}
	start := st.Start
	if start.IsZero() {
		start = time.Now()
	}
	ctx, s := t.tracer.Start(runContext(ctx, st.TraceParent), "invoke_agent "+st.Agent, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(start),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName(st.Agent),
			semconv.GenAIConversationID(st.SessionID),
			semconv.GenAIProviderNameKey.String(st.Provider),
			semconv.GenAIRequestModel(st.Model),
			KeyRunID.String(st.RunID),
			KeyLeaseOwner.String(st.Owner),
			KeyAgentVersion.String(st.AgentVersion),
		))
	return ctx, &Span{t: t, s: s, start: start, a: st.Agent}
}

// EndStep ends the Step with its decision and the checkpoint it left;
// errType and msg (redacted) when it failed.
func (sp *Span) EndStep(ctx context.Context, next, checkpointID, errType, msg string) {
	if sp == nil {
		return
	}
	sp.s.SetAttributes(KeyNext.String(next), KeyCheckpointID.String(checkpointID))
	sp.fail(errType, msg)
	sp.t.steps.Add(ctx, 1, metric.WithAttributes(semconv.GenAIAgentName(sp.a), KeyNext.String(next)))
	sp.s.End()
}

// StartChat starts chat {model}, a client span.
func (t *Telemetry) StartChat(ctx context.Context, c span.Chat) (context.Context, span.ChatSpan) {
	if t == nil {
		return ctx, (*Span)(nil)
	}
	ctx, s := t.tracer.Start(ctx, "chat "+c.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.GenAIOperationNameChat,
			semconv.GenAIProviderNameKey.String(c.Provider),
			semconv.GenAIRequestModel(c.Model),
			semconv.GenAIConversationID(c.SessionID),
			KeyRunID.String(c.RunID),
		))
	if t.capture && s.IsRecording() {
		s.SetAttributes(semconv.GenAIInputMessagesKey.String(c.Input), semconv.GenAISystemInstructionsKey.String(c.System))
	}
	return ctx, &Span{t: t, s: s, start: time.Now(), a: c.Provider, b: c.Model}
}

// EndChat ends a model call and records gen_ai.client.token.usage and
// gen_ai.client.operation.duration.
func (sp *Span) EndChat(ctx context.Context, r span.ChatResult) {
	if sp == nil {
		return
	}
	respModel := r.ResponseModel
	if respModel == "" {
		respModel = sp.b
	}
	sp.s.SetAttributes(semconv.GenAIResponseModel(respModel))
	if r.ErrType == "" {
		sp.s.SetAttributes(semconv.GenAIResponseID(r.ResponseID), semconv.GenAIResponseFinishReasons(r.FinishReason),
			semconv.GenAIUsageInputTokens(int(r.InputTokens)), semconv.GenAIUsageOutputTokens(int(r.OutputTokens)))
		if sp.t.capture && sp.s.IsRecording() {
			sp.s.SetAttributes(semconv.GenAIOutputMessagesKey.String(r.Output))
		}
	}
	sp.fail(r.ErrType, r.Err)
	base := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(sp.a),
		semconv.GenAIRequestModel(sp.b), semconv.GenAIResponseModel(respModel)}
	dur := base
	if r.ErrType != "" {
		dur = append(dur, semconv.ErrorTypeKey.String(r.ErrType))
	} else {
		sp.t.tokens.Record(ctx, r.InputTokens, metric.WithAttributes(append(base, semconv.GenAITokenTypeInput)...))
		sp.t.tokens.Record(ctx, r.OutputTokens, metric.WithAttributes(append(base, semconv.GenAITokenTypeOutput)...))
	}
	sp.t.opDuration.Record(ctx, time.Since(sp.start).Seconds(), metric.WithAttributes(dur...))
	sp.s.End()
}

// StartTool starts execute_tool {tool}.
func (t *Telemetry) StartTool(ctx context.Context, c span.Tool) (context.Context, span.ToolSpan) {
	if t == nil {
		return ctx, (*Span)(nil)
	}
	typ := "function"
	if c.Effect {
		typ = "extension"
	}
	ctx, s := t.tracer.Start(ctx, "execute_tool "+c.Tool, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(c.Tool),
			semconv.GenAIToolCallID(c.CallID),
			semconv.GenAIToolType(typ),
			KeyRunID.String(c.RunID),
			KeyPlanItemID.String(c.PlanItemID),
			KeyMode.String(c.Mode),
		))
	if t.capture && s.IsRecording() {
		s.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(c.Args))
	}
	return ctx, &Span{t: t, s: s, start: time.Now(), a: c.Tool}
}

// EndTool ends a tool call with its outcome (completed, failed, denied,
// needs_human, ...) and records keel.tool.duration; result is the
// (redacted) content, used only when CaptureContent.
func (sp *Span) EndTool(ctx context.Context, outcome, errType, msg, result string) {
	if sp == nil {
		return
	}
	sp.s.SetAttributes(KeyOutcome.String(outcome))
	if sp.t.capture && sp.s.IsRecording() && errType == "" {
		sp.s.SetAttributes(semconv.GenAIToolCallResultKey.String(result))
	}
	sp.fail(errType, msg)
	sp.t.toolLatency.Record(ctx, time.Since(sp.start).Seconds(), metric.WithAttributes(semconv.GenAIToolName(sp.a), KeyOutcome.String(outcome)))
	sp.s.End()
}

// StartDispatch starts keel.operation.dispatch: the effect sent to its
// destination under the operation id as idempotency key.
func (t *Telemetry) StartDispatch(ctx context.Context, o span.Op) (context.Context, span.OpSpan) {
	if t == nil {
		return ctx, (*Span)(nil)
	}
	// The tool call's span names the operation its effect runs under.
	trace.SpanFromContext(ctx).SetAttributes(KeyOperationID.String(o.OperationID))
	return t.startOp(ctx, "keel.operation.dispatch", o)
}

// StartReconcile starts keel.operation.reconcile: a pending operation
// settled through its destination before the run goes on.
func (t *Telemetry) StartReconcile(ctx context.Context, o span.Op) (context.Context, span.OpSpan) {
	if t == nil {
		return ctx, (*Span)(nil)
	}
	ctx, sp := t.startOp(ctx, "keel.operation.reconcile", o)
	sp.c = "reconcile"
	return ctx, sp
}

// startOp starts an operation's span; t is not nil.
func (t *Telemetry) startOp(ctx context.Context, name string, o span.Op) (context.Context, *Span) {
	ctx, s := t.tracer.Start(ctx, name+" "+o.Tool, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(KeyRunID.String(o.RunID), KeyOperationID.String(o.OperationID),
			semconv.GenAIToolName(o.Tool), KeyDestination.String(o.Destination)))
	return ctx, &Span{t: t, s: s, start: time.Now(), a: o.Tool}
}

// EndOp ends a dispatch or reconciliation with its outcome (dispatched,
// rejected, uncertain; found, redispatched, failed, needs_human);
// reconciliations are counted in keel.reconciliations.
func (sp *Span) EndOp(ctx context.Context, outcome, errType, msg string) {
	if sp == nil {
		return
	}
	sp.s.SetAttributes(KeyOutcome.String(outcome))
	sp.fail(errType, msg)
	if sp.c == "reconcile" {
		sp.t.reconciles.Add(ctx, 1, metric.WithAttributes(KeyOutcome.String(outcome), semconv.GenAIToolName(sp.a)))
	}
	sp.s.End()
}

// ApprovalRequested counts an approval that now waits for a person.
func (t *Telemetry) ApprovalRequested(ctx context.Context, a span.Approval) {
	if t == nil {
		return
	}
	t.approvals.Add(ctx, 1, metric.WithAttributes(semconv.GenAIToolName(a.Tool)))
	trace.SpanFromContext(ctx).AddEvent("keel.approval.requested", trace.WithAttributes(KeyApprovalID.String(a.ApprovalID), semconv.GenAIToolName(a.Tool)))
}

// ApprovalDecided writes keel.approval.wait, from the request to the
// decision (however many processes and days lie between), in the Step
// that reads the decision, and counts the approval as no longer waiting.
func (t *Telemetry) ApprovalDecided(ctx context.Context, a span.Approval) {
	if t == nil {
		return
	}
	end := a.Decided
	if end.IsZero() || end.Before(a.Requested) {
		end = time.Now()
	}
	_, s := t.tracer.Start(ctx, "keel.approval.wait "+a.Tool, trace.WithTimestamp(a.Requested),
		trace.WithAttributes(KeyRunID.String(a.RunID), KeyApprovalID.String(a.ApprovalID), semconv.GenAIToolName(a.Tool), KeyStatus.String(a.Status)))
	s.End(trace.WithTimestamp(end))
	t.approvals.Add(ctx, -1, metric.WithAttributes(semconv.GenAIToolName(a.Tool)))
}

// ApprovalClosed counts an approval closed without a decision (the run
// was cancelled, ran out of budget or was finalized) as no longer waiting.
func (t *Telemetry) ApprovalClosed(ctx context.Context, toolName string) {
	if t == nil {
		return
	}
	t.approvals.Add(ctx, -1, metric.WithAttributes(semconv.GenAIToolName(toolName)))
}

// LeaseAcquired writes keel.lease.acquire, from start to now: the Step
// took the run's single-writer lease with a new fencing token. ctx holds
// the Step's span (the lease is taken before the Step knows its run's
// trace, so the span is written once it does).
func (t *Telemetry) LeaseAcquired(ctx context.Context, runID, owner string, token int64, start time.Time) {
	if t == nil {
		return
	}
	trace.SpanFromContext(ctx).SetAttributes(KeyLeaseToken.Int64(token))
	_, s := t.tracer.Start(ctx, "keel.lease.acquire", trace.WithTimestamp(start),
		trace.WithAttributes(KeyRunID.String(runID), KeyLeaseOwner.String(owner), KeyLeaseToken.Int64(token)))
	s.End()
}

// Fenced marks the Step as stopped by a newer worker's lease: the other
// half of a takeover.
func (sp *Span) Fenced() {
	if sp == nil {
		return
	}
	sp.s.AddEvent("keel.lease.fenced")
}

// Takeover records keel.lease.takeover: a process (keel dev at start)
// ending the leases its dead predecessors held, n of them, so their runs
// go on at once instead of after the lease TTL.
func (t *Telemetry) Takeover(ctx context.Context, owner string, n int64) {
	if t == nil {
		return
	}
	_, s := t.tracer.Start(ctx, "keel.lease.takeover", trace.WithAttributes(KeyLeaseOwner.String(owner), KeyLeasesTaken.Int64(n)))
	s.End()
}

// RunEnded writes the run's root span, keel.run {agent}, from its
// creation to now, with the span id its stored trace context names (so
// every Step's span is its child), and counts the run by final status.
func (t *Telemetry) RunEnded(ctx context.Context, r span.Run) {
	if t == nil {
		return
	}
	t.runs.Add(ctx, 1, metric.WithAttributes(KeyStatus.String(r.Status), semconv.GenAIAgentName(r.Agent)))
	parent := trace.SpanContextFromContext(runContext(context.Background(), r.TraceParent))
	rctx := trace.ContextWithSpanContext(ctx, trace.SpanContext{}) // no parent: this is the root
	if parent.IsValid() {
		rctx = withIDs(rctx, parent.TraceID(), parent.SpanID())
	}
	_, s := t.tracer.Start(rctx, "keel.run "+r.Agent, trace.WithNewRoot(), trace.WithTimestamp(r.Created),
		trace.WithAttributes(KeyRunID.String(r.RunID), semconv.GenAIAgentName(r.Agent),
			semconv.GenAIConversationID(r.SessionID), KeyStatus.String(r.Status)))
	if r.Status == "failed" {
		s.SetStatus(codes.Error, r.Err)
	}
	s.End()
}

// NeedsHuman counts a run stopped for a person.
func (t *Telemetry) NeedsHuman(ctx context.Context, agent, reason string) {
	if t == nil {
		return
	}
	t.needsHuman.Add(ctx, 1, metric.WithAttributes(semconv.GenAIAgentName(agent)))
	trace.SpanFromContext(ctx).AddEvent("keel.run.needs_human", trace.WithAttributes(attribute.String("keel.reason", reason)))
}

// ProviderName maps a model spec's provider to gen_ai.provider.name.
func ProviderName(p string) string {
	switch strings.ToLower(p) {
	case "anthropic":
		return "anthropic"
	case "openai":
		return "openai"
	case "bedrock":
		return "aws.bedrock"
	case "":
		return "keel.custom"
	}
	return "keel." + strings.ToLower(p)
}
