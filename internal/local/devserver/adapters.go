// Adapters from the local executor to what Lambda handlers, the task runner and the sweeper call (split from devserver.go to keep files short).

package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/aws/states"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// lambda adapts a typed handler to the executor's JSON interface, with the
// same JSON round trip a Lambda invocation has.
func lambda[In, Out any](h func(context.Context, In) (Out, error)) states.LambdaFunc {
	return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		var in In
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

type lateTokens struct{ e *states.Executor }

func (t *lateTokens) SendTaskSuccess(ctx context.Context, token, output string) error {
	return t.e.SendTaskSuccess(ctx, token, output)
}

func (t *lateTokens) SendTaskFailure(ctx context.Context, token, name, cause string) error {
	return t.e.SendTaskFailure(ctx, token, name, cause)
}

type execStarter struct{ e *states.Executor }

func (x execStarter) StartExecution(ctx context.Context, arn, name, input string) error {
	_, err := x.e.StartExecution(ctx, states.StartExecutionInput{StateMachineArn: arn, Name: name, Input: input})
	return err
}

// Sweep runs one sweep now (package sweeper): what `keel dev` does at
// start and every SweepInterval.
func (s *Server) Sweep(ctx context.Context) (sweeper.Report, error) { return s.sweeper.Sweep(ctx) }

// execSweep adapts the local executor to sweeper.Executions.
type execSweep struct {
	e   *states.Executor
	arn string
}

func (x execSweep) ExecutionStatus(ctx context.Context, name string) (string, error) {
	arn := strings.Replace(x.arn, ":stateMachine:", ":execution:", 1) + ":" + name
	d, err := x.e.DescribeExecution(ctx, arn)
	var ae *states.APIError
	if errors.As(err, &ae) && ae.Code == states.CodeExecutionDoesNotExist {
		return "", sweeper.ErrNoExecution
	}
	return d.Status, err
}

func (x execSweep) StartExecution(ctx context.Context, name, input string) error {
	_, err := x.e.StartExecution(ctx, states.StartExecutionInput{StateMachineArn: x.arn, Name: name, Input: input})
	var ae *states.APIError
	if errors.As(err, &ae) && ae.Code == states.CodeExecutionAlreadyExists {
		return nil
	}
	return err
}

// wakeFaults hits harness.FaultBeforeWake before the API wakes a wait:
// the decision it delivers is durable by then, and a keel dev killed
// there leaves the wake to the sweeper or to a repeated decision.
type wakeFaults struct {
	roles.Resumer
	faults harness.FaultPoints
}

func (w wakeFaults) Resume(ctx context.Context, ap run.Approval) error {
	w.faults.Hit(harness.FaultBeforeWake)
	return w.Resumer.Resume(ctx, ap)
}
