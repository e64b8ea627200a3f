package harness

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// PanicError is a tool's panic, recovered by the harness around one call
// into the tool: a read-only or confirm tool's Run, an effect's Intent,
// Dispatch or Lookup. The call then reads as that call returning this
// error, so the run goes on by the rules it already has for it:
//
//   - Run or Intent: the plan item failed, the model is told, the run goes
//     on (nothing was recorded as sent);
//   - Dispatch: the outcome is unknown (the request may have left before
//     the panic), reconciled or handed to a person like any dispatch error
//     that is not an ops.Rejected;
//   - Lookup: the destination could not answer, as a lookup error.
//
// Its message is the records' one spelling, run.ToolPanicked; the stack
// goes to the worker's log only (it describes the worker's code, not the
// run).
type PanicError struct {
	Tool  string
	Call  string // run, intent, dispatch, lookup
	Value any
	Stack []byte
}

// Error implements error. PanicError has no Unwrap on purpose: a value
// panicked with (an *ops.Rejected, context.Canceled) is no answer from
// the destination, and must not be matched as one.
func (e *PanicError) Error() string { return run.ToolPanicked(e.Tool, e.Value) }

// recoverTool, deferred directly around a call into a tool, turns its
// panic into a *PanicError in *errp, logged with its stack.
func recoverTool(e *env, name, call, planItem string, errp *error) {
	v := recover()
	if v == nil {
		return
	}
	*errp = toolPanicked(e, name, call, planItem, v)
}

// toolPanicked logs a recovered panic as one line carrying the stack.
func toolPanicked(e *env, name, call, planItem string, v any) *PanicError {
	pe := &PanicError{Tool: name, Call: call, Value: v, Stack: debug.Stack()}
	e.log.Error("tool panicked", "tool", name, "call", call, "plan_item", planItem,
		"panic", e.red.redact(fmt.Sprint(v)), "stack", string(pe.Stack))
	return pe
}

// runTool is t.Run with its panic recovered.
func runTool(ctx context.Context, e *env, t tool.Tool, name string, c tool.Call) (res tool.Result, err error) {
	defer recoverTool(e, name, "run", c.PlanItemID, &err)
	return t.Run(ctx, c)
}

// guardEffect wraps an effect so that a panic in any of its calls is
// recovered (see PanicError).
func guardEffect(e *env, t tool.Effectful) tool.Effectful {
	if t == nil {
		return nil
	}
	if g, ok := t.(guardedEffect); ok {
		return g
	}
	return guardedEffect{Effectful: t, e: e}
}

type guardedEffect struct {
	tool.Effectful
	e *env
}

var _ tool.Effectful = guardedEffect{}

func (g guardedEffect) Intent(ctx context.Context, c tool.Call) (in tool.Intent, err error) {
	defer recoverTool(g.e, g.Info().Name, "intent", c.PlanItemID, &err)
	return g.Effectful.Intent(ctx, c)
}

func (g guardedEffect) Dispatch(ctx context.Context, op run.Operation) (out ops.Outcome, err error) {
	defer recoverTool(g.e, g.Info().Name, "dispatch", op.PlanItemID, &err)
	return g.Effectful.Dispatch(ctx, op)
}

func (g guardedEffect) Lookup(ctx context.Context, op run.Operation) (out ops.Outcome, found bool, err error) {
	defer recoverTool(g.e, g.Info().Name, "lookup", op.PlanItemID, &err)
	return g.Effectful.Lookup(ctx, op)
}

// Describe runs once the outcome is confirmed: a panic here changes
// nothing of the operation, so the model is told it succeeded.
func (g guardedEffect) Describe(op run.Operation) (res tool.Result) {
	defer func() {
		if v := recover(); v != nil {
			pe := toolPanicked(g.e, g.Info().Name, "describe", op.PlanItemID, v)
			res = tool.Result{Content: fmt.Sprintf("operation %s succeeded at %s (external id %q); describing it failed: %v",
				op.ID, op.Destination, op.ExternalID, pe)}
		}
	}()
	return g.Effectful.Describe(op)
}
