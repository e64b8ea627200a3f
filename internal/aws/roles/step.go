package roles

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// StepInput is the Step task's payload.
type StepInput struct {
	RunID string `json:"run_id"`
	// ExecutionID is the Step Functions execution stepping the run
	// ($$.Execution.Id in the definition), for the logs.
	ExecutionID string `json:"execution_id,omitempty"`
	// Code is the function the state machine invoked (its $.step.code):
	// the live alias, or the version a pinned run's Steps run on.
	Code string `json:"code,omitempty"`
}

// StepOutput is the Step task's result: the harness's decision and the
// function that runs the run's next Step (the state machine's
// $.step.code).
type StepOutput struct {
	harness.Decision
	Code string `json:"code"`
}

// Placement says where a run's Steps must run when code is deployed in
// versions (on AWS, published versions of the step function behind the
// live alias).
type Placement interface {
	// Home returns the function that must run runID's Steps when it is
	// not this one ("": this one may), and whether the run is pinned to
	// the version it was created on.
	Home(ctx context.Context, runID string) (home string, pinned bool, err error)
}

// Stepper is the harness.
type Stepper interface {
	Step(ctx context.Context, runID string, budget time.Duration) (harness.Decision, error)
	Finalize(ctx context.Context, runID, errMsg string) (run.Run, error)
}

// Step runs one bounded harness step. Budget is the time the harness may
// spend; in a Lambda it is the remaining time less a margin.
type Step struct {
	Harness Stepper
	// Budget returns the time budget for this invocation.
	Budget func(ctx context.Context) time.Duration
	// Self is this function's qualified name (NAME:VERSION) when it runs
	// as a published version; empty otherwise (keel dev, $LATEST), and
	// then runs are never sent elsewhere.
	Self string
	// Place is consulted only when Self is set.
	Place Placement
}

// Handle runs the step. Errors are the harness's named types, which the
// state machine's Retry and Catch match by name.
//
// A pinned run whose version is deployed elsewhere is not stepped here:
// the output sends the state machine to that version's code (next
// continue, code its function), without touching the run. A pinned run
// stepped here keeps this version as its code; any other keeps the code
// it was invoked as (the live alias), so its next Step runs the newest
// version, after the harness's check.
func (s Step) Handle(ctx context.Context, in StepInput) (StepOutput, error) {
	if in.RunID == "" {
		return StepOutput{}, errors.New("step: run_id is empty")
	}
	code, pinned := in.Code, false
	switch {
	case s.Self != "" && in.Code == s.Self:
		// Only a pinned run is sent to a version by name: it is home.
		pinned = true
	case s.Self != "" && s.Place != nil:
		home, pin, err := s.Place.Home(ctx, in.RunID)
		if err != nil {
			return StepOutput{}, &harness.RetryableError{Err: fmt.Errorf("step: where run %s runs: %w", in.RunID, err)}
		}
		if home != "" && home != s.Self {
			return StepOutput{Decision: harness.Decision{Next: harness.NextContinue, Children: []string{}}, Code: home}, nil
		}
		pinned = pin
	}
	budget := 10 * time.Minute
	if s.Budget != nil {
		budget = s.Budget(ctx)
	}
	d, err := s.Harness.Step(ctx, in.RunID, budget)
	if pinned {
		code = s.Self
	}
	if d.Children == nil {
		d.Children = []string{}
	}
	return StepOutput{Decision: d, Code: code}, err
}

// LambdaBudget is the time left before ctx's deadline, less margin for the
// commit and the response; 10 minutes when ctx has no deadline.
func LambdaBudget(margin time.Duration) func(context.Context) time.Duration {
	return func(ctx context.Context) time.Duration {
		dl, ok := ctx.Deadline()
		if !ok {
			return 10 * time.Minute
		}
		left := time.Until(dl) - margin
		if left < time.Second {
			left = time.Second
		}
		return left
	}
}
