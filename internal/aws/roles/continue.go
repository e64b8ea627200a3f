package roles

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/stepfunctions"
)

// ExecutionStatuses reads an execution's status by name: RUNNING,
// SUCCEEDED, FAILED, ..., or sweeper.ErrNoExecution. The sweeper's
// executions (sweeper.Executions) have it.
type ExecutionStatuses interface {
	ExecutionStatus(ctx context.Context, name string) (string, error)
}

// ContinueRun implements api.Continuer: it starts the run's first
// generation whose name is free, for a run a person's decision moved on
// after its executions ended.
//
// A person may answer while the execution that stopped the run is still
// on its way out (needs_human → Finalize → Done): that execution drives
// the run no further. With Statuses, a running execution is waited for
// (a bounded poll; Finalize takes moments) and the next generation
// started once it ended; one still running after the bound is left to
// drive the run, and the sweeper repairs a run it leaves. Without
// Statuses a running execution of the same name and input answers as
// started (StartExecution is idempotent then), and the run is left to it.
func (s Starter) ContinueRun(ctx context.Context, runID string) error {
	for gen := 0; gen < maxGenerations; gen++ {
		name := stepfunctions.ExecutionName(runID, gen)
		if s.Statuses != nil {
			running, err := s.endedOrRunning(ctx, name)
			switch {
			case errors.Is(err, sweeper.ErrNoExecution):
			case err != nil:
				return fmt.Errorf("continue %s: %w", runID, err)
			case running:
				return nil
			default:
				continue
			}
		}
		err := s.Executions.StartExecution(ctx, s.StateMachineARN, name, stepfunctions.ExecutionInput(runID, gen))
		if err == nil || !isAlreadyStarted(err) {
			return err
		}
	}
	return fmt.Errorf("continue %s: over %d generations", runID, maxGenerations)
}

// endedOrRunning waits, up to continuePolls reads, for the execution
// named name to end; it reports true when it is still running then.
func (s Starter) endedOrRunning(ctx context.Context, name string) (bool, error) {
	wait := 20 * time.Millisecond
	for i := 0; ; i++ {
		st, err := s.Statuses.ExecutionStatus(ctx, name)
		if err != nil || st != "RUNNING" {
			return false, err
		}
		if i == continuePolls {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// continuePolls bounds endedOrRunning: about ten seconds of reads.
const continuePolls = 25

// maxGenerations bounds ContinueRun's search, as the sweeper's.
const maxGenerations = 10000
