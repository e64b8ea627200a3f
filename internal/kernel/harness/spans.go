package harness

// The spans of a Step as a whole and of the run it ends (the spans inside
// a Step are the tracer's, telemetry.go).

import (
	"context"
	"errors"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/span"
)

// startStep starts the Step's invoke_agent span as a child of the run's
// stored trace context, backdated to the Step's start, with the lease
// just taken as its first child.
func startStep(ctx context.Context, opt *Options, r run.Run, start time.Time) (context.Context, span.StepSpan) {
	tel := opt.Telemetry
	if tel == nil {
		return ctx, nil
	}
	a, _ := opt.Agents.Agent(r.Agent)
	ctx, sp := tel.StartStep(ctx, span.Step{RunID: r.ID, SessionID: r.SessionID, Agent: r.Agent, Provider: a.Provider,
		Model: a.ModelName, TraceParent: r.TraceParent, Owner: opt.Owner, Start: start, AgentVersion: a.Version})
	tel.LeaseAcquired(ctx, r.ID, opt.Owner, r.Lease.Token, start)
	return ctx, sp
}

// endStep ends the Step's span with its decision, and records the run's
// end (its root span, runs by final status) or its stop for a person. cp
// is the run's last checkpoint; red, the Step's redaction (none when the
// Step ended before it had one).
func endStep(ctx context.Context, tel Telemetry, sp span.StepSpan, r run.Run, cp string, red redactor, d Decision, err error) {
	if tel == nil {
		return
	}
	msg := red.redact(errString(err))
	d.Error = red.redact(d.Error)
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
	runEnded(ctx, tel, r, d)
}

// runEnded records a run that a Step or Finalize ended.
func runEnded(ctx context.Context, tel Telemetry, r run.Run, d Decision) {
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
