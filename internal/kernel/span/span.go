package span

import (
	"context"
	"time"
)

// Step is one Step of a run.
type Step struct {
	RunID, SessionID, Agent, Provider, Model string
	TraceParent                              string // the run's stored trace context
	Owner                                    string
	Start                                    time.Time // when the Step began (before its lease); zero: now
	// AgentVersion is the version of the agent the Step runs (agentver).
	AgentVersion string
}

// Chat is one model call.
type Chat struct {
	RunID, SessionID, Provider, Model string
	// Input and System are the (redacted) request content, set only when
	// the telemetry captures content.
	Input, System string
}

// ChatResult is what a model call returned.
type ChatResult struct {
	ResponseModel, ResponseID, FinishReason string
	InputTokens, OutputTokens               int64
	// Output is the (redacted) answer, set only when the telemetry
	// captures content.
	Output string
	// ErrType and Err (redacted) describe a failed call.
	ErrType, Err string
}

// Tool is one tool call.
type Tool struct {
	RunID, Tool, CallID, PlanItemID, Mode string
	Effect                                bool // an external effect (the operation protocol)
	// Args are the (redacted) arguments, set only when the telemetry
	// captures content.
	Args string
}

// Op is one operation of the protocol.
type Op struct {
	RunID, OperationID, Tool, Destination string
}

// Approval is one approval of a tool call.
type Approval struct {
	RunID, ApprovalID, Tool, Status string
	Requested, Decided              time.Time
}

// Run is a run that ended or stopped for a person.
type Run struct {
	RunID, SessionID, Agent, TraceParent, Status string
	Created                                      time.Time
	Err                                          string // redacted
}

// StepSpan is a Step's span in flight. End it exactly once.
type StepSpan interface {
	// Fenced marks the Step as stopped by a newer worker's lease.
	Fenced()
	// EndStep ends the Step with its decision and the checkpoint it
	// left; errType and msg (redacted) when it failed.
	EndStep(ctx context.Context, next, checkpointID, errType, msg string)
}

// ChatSpan is a model call's span in flight.
type ChatSpan interface {
	// Recording reports whether the span records; content is built only
	// then.
	Recording() bool
	EndChat(ctx context.Context, r ChatResult)
}

// ToolSpan is a tool call's span in flight.
type ToolSpan interface {
	// EndTool ends the call with its outcome (completed, failed, denied,
	// needs_human, ...); result is the (redacted) content, used only
	// when content is captured.
	EndTool(ctx context.Context, outcome, errType, msg, result string)
}

// OpSpan is a dispatch's or a reconciliation's span in flight.
type OpSpan interface {
	// EndOp ends it with its outcome (dispatched, rejected, uncertain;
	// found, redispatched, failed, needs_human).
	EndOp(ctx context.Context, outcome, errType, msg string)
}
