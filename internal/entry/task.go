package entry

import (
	"context"

	"github.com/keelrun/keel/internal/longtask"
)

// RunTask is tasks/fargate: it steps Env.RunID without the 15-minute bound,
// heartbeating Env.TaskToken, until a decision, and reports the decision
// with SendTaskSuccess (a harness error with SendTaskFailure under its type
// name). Closing stop (SIGTERM) ends it after the current step, whose
// commit releases the lease, with "continue". It returns an error only
// when the outcome could not be reported.
func RunTask(ctx context.Context, d Deps, stop <-chan struct{}) error {
	return longtask.Main(ctx, longtask.MainConfig{Setup: d.Env.Setup, Backends: d.Backends, Tokens: d.SFN,
		RunID: d.Env.RunID, TaskToken: d.Env.TaskToken, Logger: d.logger()}, stop)
}
