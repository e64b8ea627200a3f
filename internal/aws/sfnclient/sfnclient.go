package sfnclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"
)

// Sentinel errors; see the package doc for the AWS codes behind each.
var (
	ErrExecutionAlreadyExists   = errors.New("execution already exists")
	ErrExecutionDoesNotExist    = errors.New("execution does not exist")
	ErrStateMachineDoesNotExist = errors.New("state machine does not exist")
	ErrTaskTimedOut             = errors.New("task timed out or already answered")
	ErrTaskDoesNotExist         = errors.New("task does not exist")
	ErrInvalidToken             = errors.New("invalid task token")
	ErrInvalid                  = errors.New("invalid request")
)

// Step Functions limits, applied before sending so that a long cause is
// truncated rather than refused.
const (
	maxErrorName = 256
	maxCause     = 32768
)

// API is the part of *sfn.Client this package calls.
type API interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, opts ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
	SendTaskHeartbeat(ctx context.Context, in *sfn.SendTaskHeartbeatInput, opts ...func(*sfn.Options)) (*sfn.SendTaskHeartbeatOutput, error)
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

var _ API = (*sfn.Client)(nil)

// Starter starts executions (the API and Rollover).
type Starter interface {
	StartExecution(ctx context.Context, stateMachineARN, name, input string) (executionARN string, err error)
}

// Tokens answers task tokens (the approval flow and the long-running task).
type Tokens interface {
	SendTaskSuccess(ctx context.Context, token, output string) error
	SendTaskFailure(ctx context.Context, token, errName, cause string) error
	SendTaskHeartbeat(ctx context.Context, token string) error
}

// Describer reads and stops executions (the sweeper).
type Describer interface {
	// DescribeExecution returns the execution's status;
	// ErrExecutionDoesNotExist when there is none by that ARN.
	DescribeExecution(ctx context.Context, executionARN string) (Execution, error)
	StopExecution(ctx context.Context, executionARN, errName, cause string) error
}

// Execution is what DescribeExecution reports.
type Execution struct {
	ARN    string
	Name   string
	Status string // RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, PENDING_REDRIVE
	Error  string
	Cause  string
}

// Client implements Starter, Tokens and Describer on the Step Functions API.
type Client struct{ api API }

var (
	_ Starter   = (*Client)(nil)
	_ Tokens    = (*Client)(nil)
	_ Describer = (*Client)(nil)
)

// ExecutionARN is the ARN of the execution named name of the state
// machine stateMachineARN (arn:PARTITION:states:REGION:ACCOUNT:stateMachine:M
// → ...:execution:M:NAME); "" when stateMachineARN is not a state
// machine's ARN.
func ExecutionARN(stateMachineARN, name string) string {
	const marker = ":stateMachine:"
	i := strings.Index(stateMachineARN, marker)
	if i < 0 || name == "" {
		return ""
	}
	return stateMachineARN[:i] + ":execution:" + stateMachineARN[i+len(marker):] + ":" + name
}

// DescribeExecution implements Describer.
func (c *Client) DescribeExecution(ctx context.Context, executionARN string) (Execution, error) {
	out, err := c.api.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
	if err != nil {
		return Execution{}, mapErr("DescribeExecution", err)
	}
	return Execution{ARN: aws.ToString(out.ExecutionArn), Name: aws.ToString(out.Name), Status: string(out.Status),
		Error: aws.ToString(out.Error), Cause: aws.ToString(out.Cause)}, nil
}

// StopExecution implements Describer: the execution ends ABORTED with
// errName and cause (truncated to Step Functions' limits).
func (c *Client) StopExecution(ctx context.Context, executionARN, errName, cause string) error {
	_, err := c.api.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(executionARN),
		Error: aws.String(truncate(errName, maxErrorName)), Cause: aws.String(truncate(cause, maxCause))})
	return mapErr("StopExecution", err)
}

// New returns a Client calling api.
func New(api API) (*Client, error) {
	if api == nil {
		return nil, errors.New("sfnclient: nil API client")
	}
	return &Client{api: api}, nil
}

// StartExecution starts (or, with the same name and input, finds) an
// execution and returns its ARN.
func (c *Client) StartExecution(ctx context.Context, stateMachineARN, name, input string) (string, error) {
	in := &sfn.StartExecutionInput{StateMachineArn: aws.String(stateMachineARN), Input: aws.String(input)}
	if name != "" {
		in.Name = aws.String(name)
	}
	out, err := c.api.StartExecution(ctx, in)
	if err != nil {
		return "", mapErr("StartExecution", err)
	}
	return aws.ToString(out.ExecutionArn), nil
}

// SendTaskSuccess completes the task waiting on token with output (JSON).
func (c *Client) SendTaskSuccess(ctx context.Context, token, output string) error {
	_, err := c.api.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(output)})
	return mapErr("SendTaskSuccess", err)
}

// SendTaskFailure fails the task waiting on token; errName is what the
// state machine's Retry and Catch match. Over-long values are truncated to
// Step Functions' limits.
func (c *Client) SendTaskFailure(ctx context.Context, token, errName, cause string) error {
	_, err := c.api.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(token),
		Error: aws.String(truncate(errName, maxErrorName)), Cause: aws.String(truncate(cause, maxCause))})
	return mapErr("SendTaskFailure", err)
}

// SendTaskHeartbeat tells Step Functions the task behind token is alive.
func (c *Client) SendTaskHeartbeat(ctx context.Context, token string) error {
	_, err := c.api.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	return mapErr("SendTaskHeartbeat", err)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

var codes = map[string]error{
	"ExecutionAlreadyExists":   ErrExecutionAlreadyExists,
	"ExecutionDoesNotExist":    ErrExecutionDoesNotExist,
	"StateMachineDoesNotExist": ErrStateMachineDoesNotExist,
	"TaskTimedOut":             ErrTaskTimedOut,
	"TaskDoesNotExist":         ErrTaskDoesNotExist,
	"InvalidToken":             ErrInvalidToken,
	"InvalidArn":               ErrInvalid,
	"InvalidName":              ErrInvalid,
	"InvalidExecutionInput":    ErrInvalid,
	"InvalidOutput":            ErrInvalid,
	"ValidationException":      ErrInvalid,
}

// mapErr wraps err with the sentinel its AWS error code names, if any.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if s, ok := codes[ae.ErrorCode()]; ok {
			return fmt.Errorf("sfn %s: %w: %w", op, s, err)
		}
	}
	return fmt.Errorf("sfn %s: %w", op, err)
}
