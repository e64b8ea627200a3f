package harness

import (
	"context"
	"errors"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/span"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Telemetry is what the harness records spans and metrics through,
// declared here so that the harness links no exporter: internal/observe/otelkeel's
// *Telemetry implements it with OpenTelemetry, and internal/compose wires
// one in. Options.Telemetry is nil unless an exporter is configured, and
// then every helper below returns at once: the Step pays nothing for it.
// Everything a span carries that a tool or model produced goes through
// the step's redaction first. Implementations must be safe for
// concurrent use (tool calls run concurrently), return a handle that is
// not nil from every Start method, and cannot fail the Step: telemetry
// has no error to return.
type Telemetry interface {
	StepTelemetry
	CallTelemetry
	OpTelemetry
	ApprovalTelemetry
}

// StepTelemetry records Steps and the ends of runs.
type StepTelemetry interface {
	// StartStep starts a Step's span, a child of the run's stored trace
	// context; the returned context carries it.
	StartStep(ctx context.Context, st span.Step) (context.Context, span.StepSpan)
	// LeaseAcquired records the lease the Step took, from start to now.
	LeaseAcquired(ctx context.Context, runID, owner string, token int64, start time.Time)
	// RunEnded records a run that ended (completed, failed, cancelled).
	RunEnded(ctx context.Context, r span.Run)
	// NeedsHuman records a run stopped for a person.
	NeedsHuman(ctx context.Context, agent, reason string)
}

// CallTelemetry records model and tool calls.
type CallTelemetry interface {
	// CaptureContent reports whether content goes on spans; the harness
	// builds the (redacted) content only then.
	CaptureContent() bool
	StartChat(ctx context.Context, c span.Chat) (context.Context, span.ChatSpan)
	StartTool(ctx context.Context, c span.Tool) (context.Context, span.ToolSpan)
}

// OpTelemetry records the operation protocol's dispatches and
// reconciliations.
type OpTelemetry interface {
	StartDispatch(ctx context.Context, o span.Op) (context.Context, span.OpSpan)
	StartReconcile(ctx context.Context, o span.Op) (context.Context, span.OpSpan)
}

// ApprovalTelemetry records approvals' waits: requested, then decided or
// closed without a decision.
type ApprovalTelemetry interface {
	ApprovalRequested(ctx context.Context, a span.Approval)
	ApprovalDecided(ctx context.Context, a span.Approval)
	ApprovalClosed(ctx context.Context, toolName string)
}

// tracer records a Step's model calls, tool calls, operations and
// approvals through Options.Telemetry (nil: it returns at once, at no
// cost); what a tool or model produced is redacted first.
type tracer struct {
	tel             Telemetry
	runID, session  string
	provider, model string
	red             redactor
}

// startChat starts the span of one model call.
func (tc *tracer) startChat(ctx context.Context, req model.Request) (context.Context, span.ChatSpan) {
	tel := tc.tel
	if tel == nil {
		return ctx, nil
	}
	c := span.Chat{RunID: tc.runID, SessionID: tc.session, Provider: tc.provider, Model: tc.model}
	if tel.CaptureContent() {
		c.Input, c.System = tc.red.redact(string(mustJSON(req.Messages))), tc.red.redact(req.System)
	}
	return tel.StartChat(ctx, c)
}

func (tc *tracer) endChat(ctx context.Context, sp span.ChatSpan, resp model.Response, err error) {
	if tc.tel == nil {
		return
	}
	r := span.ChatResult{ResponseModel: resp.Model, ResponseID: resp.ResponseID, FinishReason: resp.StopReason,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}
	if err != nil {
		r.ErrType, r.Err = modelErrType(err), tc.red.redact(err.Error())
	} else if sp.Recording() && tc.tel.CaptureContent() {
		r.Output = tc.red.redact(string(mustJSON(model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})))
	}
	sp.EndChat(ctx, r)
}

func modelErrType(err error) string {
	var rl *model.RateLimitedError
	var ce *model.CallError
	switch {
	case errors.As(err, &rl):
		return "rate_limited"
	case errors.As(err, &ce) && ce.Permanent():
		return model.AttemptClientError
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "model_error"
}

// startTool starts execute_tool for a plan item.
func (tc *tracer) startTool(ctx context.Context, it run.PlanItem, effect bool) (context.Context, span.ToolSpan) {
	tel := tc.tel
	if tel == nil {
		return ctx, nil
	}
	c := span.Tool{RunID: tc.runID, Tool: it.Tool, CallID: it.CallID, PlanItemID: it.ID, Mode: string(it.Mode), Effect: effect}
	if tel.CaptureContent() {
		c.Args = tc.red.redact(string(it.Args))
	}
	return tel.StartTool(ctx, c)
}

// endTool ends a read-only tool call.
func (tc *tracer) endTool(ctx context.Context, sp span.ToolSpan, res tool.Result, err error) {
	if tc.tel == nil {
		return
	}
	if err != nil {
		sp.EndTool(ctx, "failed", "tool_error", tc.red.redact(err.Error()), "")
		return
	}
	sp.EndTool(ctx, "completed", "", "", tc.red.redact(res.Content))
}

// endEffect ends an effectful tool call with its plan item as runEffect
// left it: completed, failed, needs_human, or running (the outcome is
// being reconciled, or the Step stopped).
func (tc *tracer) endEffect(ctx context.Context, sp span.ToolSpan, it run.PlanItem, err error) {
	if tc.tel == nil {
		return
	}
	outcome, errType, msg, result := string(it.Status), "", "", ""
	switch {
	case err != nil:
		errType, msg = "error", tc.red.redact(err.Error())
	case it.Status == run.PlanFailed || it.Status == run.PlanNeedsHuman:
		errType = string(it.Status)
		if rec, derr := decodeRecorded(it); derr == nil {
			msg = tc.red.redact(rec.Content)
		}
	case it.Status == run.PlanCompleted && tc.tel.CaptureContent():
		if rec, derr := decodeRecorded(it); derr == nil {
			result = tc.red.redact(rec.Content)
		}
	}
	sp.EndTool(ctx, outcome, errType, msg, result)
}

// startOp starts a dispatch or a reconciliation span for op.
func (tc *tracer) startOp(ctx context.Context, op run.Operation, reconcile bool) (context.Context, span.OpSpan) {
	tel := tc.tel
	if tel == nil {
		return ctx, nil
	}
	o := span.Op{RunID: tc.runID, OperationID: op.ID, Tool: op.Tool, Destination: op.Destination}
	if reconcile {
		return tel.StartReconcile(ctx, o)
	}
	return tel.StartDispatch(ctx, o)
}

func (tc *tracer) endDispatch(ctx context.Context, sp span.OpSpan, derr error) {
	if tc.tel == nil {
		return
	}
	var rej *ops.Rejected
	switch {
	case derr == nil:
		sp.EndOp(ctx, "dispatched", "", "")
	case errors.As(derr, &rej):
		sp.EndOp(ctx, "rejected", "rejected", tc.red.redact(derr.Error()))
	default:
		sp.EndOp(ctx, "uncertain", "uncertain", tc.red.redact(derr.Error()))
	}
}

func (tc *tracer) endReconcile(ctx context.Context, sp span.OpSpan, v ops.Verdict, rerr error) {
	if tc.tel == nil {
		return
	}
	outcome, errType := v.String(), ""
	if rerr != nil && v != ops.Failed {
		outcome, errType = "uncertain", "uncertain"
	} else if v == ops.Failed || v == ops.NeedsHuman {
		errType = outcome
	}
	sp.EndOp(ctx, outcome, errType, tc.red.redact(errString(rerr)))
}

// approvalRequested, approvalDecided and approvalClosed track an
// approval's wait.
func (tc *tracer) approvalRequested(ctx context.Context, ap run.Approval) {
	if tel := tc.tel; tel != nil {
		tel.ApprovalRequested(ctx, span.Approval{RunID: ap.RunID, ApprovalID: ap.ID, Tool: ap.Tool})
	}
}

func (tc *tracer) approvalDecided(ctx context.Context, ap run.Approval) {
	if tel := tc.tel; tel != nil {
		tel.ApprovalDecided(ctx, span.Approval{RunID: ap.RunID, ApprovalID: ap.ID, Tool: ap.Tool,
			Status: string(ap.Status), Requested: ap.CreatedAt, Decided: ap.DecidedAt})
	}
}

// approvalClosed: an approval closed without a decision (the run was
// cancelled, ran out of budget or was finalized) no longer waits.
func (tc *tracer) approvalClosed(ctx context.Context, toolName string) {
	if tel := tc.tel; tel != nil {
		tel.ApprovalClosed(ctx, toolName)
	}
}
