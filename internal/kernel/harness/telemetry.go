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

// startStep starts the Step's invoke_agent span as a child of the run's
// stored trace context, backdated to the Step's start, with the lease
// just taken as its first child.
func (h *Harness) startStep(ctx context.Context, r run.Run, start time.Time) (context.Context, span.StepSpan) {
	tel := h.opt.Telemetry
	if tel == nil {
		return ctx, nil
	}
	a, _ := h.opt.Agents.Agent(r.Agent)
	ctx, sp := tel.StartStep(ctx, span.Step{RunID: r.ID, SessionID: r.SessionID, Agent: r.Agent, Provider: a.Provider,
		Model: a.ModelName, TraceParent: r.TraceParent, Owner: h.opt.Owner, Start: start, AgentVersion: a.Version})
	tel.LeaseAcquired(ctx, r.ID, h.opt.Owner, r.Lease.Token, start)
	return ctx, sp
}

// endStep ends the Step's span with its decision, and records the run's
// end (its root span, runs by final status) or its stop for a person.
func (h *Harness) endStep(ctx context.Context, sp span.StepSpan, r run.Run, s *step, d Decision, err error) {
	tel := h.opt.Telemetry
	if tel == nil {
		return
	}
	cp, msg := r.CheckpointID, errString(err)
	if s != nil {
		cp, msg = s.cur.checkpoint, s.redact(msg)
		d.Error = s.redact(d.Error)
	}
	var fe *FencedError
	var re *RetryableError
	errType := ""
	switch {
	case errors.As(err, &fe):
		errType = "FencedError"
		sp.Fenced()
	case errors.As(err, &re):
		errType = "RetryableError"
	case err != nil:
		errType = "error"
	}
	sp.EndStep(ctx, string(d.Next), cp, errType, msg)
	h.runEnded(ctx, r, d)
}

// runEnded records a run that a Step or Finalize ended.
func (h *Harness) runEnded(ctx context.Context, r run.Run, d Decision) {
	tel := h.opt.Telemetry
	if tel == nil {
		return
	}
	status := ""
	switch d.Next {
	case NextDone:
		status = string(run.StatusCompleted)
	case NextFailed:
		status = string(run.StatusFailed)
	case NextCancelled:
		status = string(run.StatusCancelled)
	case NextNeedsHuman:
		tel.NeedsHuman(ctx, r.Agent, d.Error)
		return
	default:
		return
	}
	tel.RunEnded(ctx, span.Run{RunID: r.ID, SessionID: r.SessionID, Agent: r.Agent, TraceParent: r.TraceParent,
		Status: status, Created: r.CreatedAt, Err: d.Error})
}

// startChat starts the span of one model call.
func (s *step) startChat(ctx context.Context, req model.Request) (context.Context, span.ChatSpan) {
	tel := s.h.opt.Telemetry
	if tel == nil {
		return ctx, nil
	}
	c := span.Chat{RunID: s.run.ID, SessionID: s.run.SessionID, Provider: s.agent.Provider, Model: s.agent.ModelName}
	if tel.CaptureContent() {
		c.Input, c.System = s.redact(string(mustJSON(req.Messages))), s.redact(req.System)
	}
	return tel.StartChat(ctx, c)
}

func (s *step) endChat(ctx context.Context, sp span.ChatSpan, resp model.Response, err error) {
	if s.h.opt.Telemetry == nil {
		return
	}
	r := span.ChatResult{ResponseModel: resp.Model, ResponseID: resp.ResponseID, FinishReason: resp.StopReason,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}
	if err != nil {
		r.ErrType, r.Err = modelErrType(err), s.redact(err.Error())
	} else if sp.Recording() && s.h.opt.Telemetry.CaptureContent() {
		r.Output = s.redact(string(mustJSON(model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})))
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
func (s *step) startTool(ctx context.Context, it run.PlanItem, effect bool) (context.Context, span.ToolSpan) {
	tel := s.h.opt.Telemetry
	if tel == nil {
		return ctx, nil
	}
	c := span.Tool{RunID: s.run.ID, Tool: it.Tool, CallID: it.CallID, PlanItemID: it.ID, Mode: string(it.Mode), Effect: effect}
	if tel.CaptureContent() {
		c.Args = s.redact(string(it.Args))
	}
	return tel.StartTool(ctx, c)
}

// endTool ends a read-only tool call.
func (s *step) endTool(ctx context.Context, sp span.ToolSpan, res tool.Result, err error) {
	if s.h.opt.Telemetry == nil {
		return
	}
	if err != nil {
		sp.EndTool(ctx, "failed", "tool_error", s.redact(err.Error()), "")
		return
	}
	sp.EndTool(ctx, "completed", "", "", s.redact(res.Content))
}

// endEffect ends an effectful tool call with the plan item's state after
// runEffect: completed, failed, needs_human, or running (the outcome is
// being reconciled, or the Step stopped).
func (s *step) endEffect(ctx context.Context, sp span.ToolSpan, callID string, err error) {
	if s.h.opt.Telemetry == nil {
		return
	}
	it, _ := s.pl.get(callID)
	outcome, errType, msg, result := string(it.Status), "", "", ""
	switch {
	case err != nil:
		errType, msg = "error", s.redact(err.Error())
	case it.Status == run.PlanFailed || it.Status == run.PlanNeedsHuman:
		errType = string(it.Status)
		if rec, derr := decodeRecorded(it); derr == nil {
			msg = s.redact(rec.Content)
		}
	case it.Status == run.PlanCompleted && s.h.opt.Telemetry.CaptureContent():
		if rec, derr := decodeRecorded(it); derr == nil {
			result = s.redact(rec.Content)
		}
	}
	sp.EndTool(ctx, outcome, errType, msg, result)
}

// startOp starts a dispatch or a reconciliation span for op.
func (s *step) startOp(ctx context.Context, op run.Operation, reconcile bool) (context.Context, span.OpSpan) {
	tel := s.h.opt.Telemetry
	if tel == nil {
		return ctx, nil
	}
	o := span.Op{RunID: s.run.ID, OperationID: op.ID, Tool: op.Tool, Destination: op.Destination}
	if reconcile {
		return tel.StartReconcile(ctx, o)
	}
	return tel.StartDispatch(ctx, o)
}

func (s *step) endDispatch(ctx context.Context, sp span.OpSpan, derr error) {
	if s.h.opt.Telemetry == nil {
		return
	}
	var rej *ops.Rejected
	switch {
	case derr == nil:
		sp.EndOp(ctx, "dispatched", "", "")
	case errors.As(derr, &rej):
		sp.EndOp(ctx, "rejected", "rejected", s.redact(derr.Error()))
	default:
		sp.EndOp(ctx, "uncertain", "uncertain", s.redact(derr.Error()))
	}
}

func (s *step) endReconcile(ctx context.Context, sp span.OpSpan, v ops.Verdict, rerr error) {
	if s.h.opt.Telemetry == nil {
		return
	}
	outcome, errType := v.String(), ""
	if rerr != nil && v != ops.Failed {
		outcome, errType = "uncertain", "uncertain"
	} else if v == ops.Failed || v == ops.NeedsHuman {
		errType = outcome
	}
	sp.EndOp(ctx, outcome, errType, s.redact(errString(rerr)))
}

// approvalRequested, approvalDecided and approvalClosed track an
// approval's wait.
func (s *step) approvalRequested(ctx context.Context, ap run.Approval) {
	if tel := s.h.opt.Telemetry; tel != nil {
		tel.ApprovalRequested(ctx, span.Approval{RunID: ap.RunID, ApprovalID: ap.ID, Tool: ap.Tool})
	}
}

func (s *step) approvalDecided(ctx context.Context, ap run.Approval) {
	if tel := s.h.opt.Telemetry; tel != nil {
		tel.ApprovalDecided(ctx, span.Approval{RunID: ap.RunID, ApprovalID: ap.ID, Tool: ap.Tool,
			Status: string(ap.Status), Requested: ap.CreatedAt, Decided: ap.DecidedAt})
	}
}

// approvalClosed: an approval closed without a decision (the run was
// cancelled, ran out of budget or was finalized) no longer waits.
func (h *Harness) approvalClosed(ctx context.Context, toolName string) {
	if tel := h.opt.Telemetry; tel != nil {
		tel.ApprovalClosed(ctx, toolName)
	}
}
