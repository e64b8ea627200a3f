package states

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// APIError is a Step Functions API error; Code is the AWS error name
// ("ExecutionAlreadyExists", "TaskTimedOut", ...).
type APIError struct {
	Code    string
	Message string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// The Step Functions error codes this API returns.
const (
	CodeExecutionAlreadyExists   = "ExecutionAlreadyExists"
	CodeExecutionDoesNotExist    = "ExecutionDoesNotExist"
	CodeStateMachineDoesNotExist = "StateMachineDoesNotExist"
	CodeInvalidArn               = "InvalidArn"
	CodeInvalidName              = "InvalidName"
	CodeInvalidExecutionInput    = "InvalidExecutionInput"
	CodeInvalidOutput            = "InvalidOutput"
	CodeInvalidToken             = "InvalidToken"
	CodeTaskDoesNotExist         = "TaskDoesNotExist"
	CodeTaskTimedOut             = "TaskTimedOut"
	CodeValidation               = "ValidationException"
)

func apiErr(code, format string, args ...any) *APIError {
	return &APIError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func validateName(name string) error {
	if len(name) == 0 || len(name) > 80 {
		return apiErr(CodeInvalidName, "name must be 1 to 80 characters")
	}
	for _, r := range name {
		if r <= 0x20 || (r >= 0x7f && r <= 0x9f) || strings.ContainsRune("<>{}[]?*\"#%\\^|~`$&,;:/", r) {
			return apiErr(CodeInvalidName, "invalid character %q in name", r)
		}
	}
	return nil
}

// StartExecutionInput is StartExecution's request.
type StartExecutionInput struct {
	StateMachineArn string
	Name            string // empty: a random name
	Input           string // empty: "{}"
}

// StartExecutionOutput is StartExecution's response.
type StartExecutionOutput struct {
	ExecutionArn string
	StartDate    time.Time
}

// StartExecution starts an execution, durably, before it returns. As on
// AWS it is idempotent for a running execution: the same name and input
// return the running execution; a different input, or a name whose
// execution has closed, is ExecutionAlreadyExists.
func (e *Executor) StartExecution(ctx context.Context, in StartExecutionInput) (StartExecutionOutput, error) {
	prefix := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:", e.region, e.account)
	if !strings.HasPrefix(in.StateMachineArn, prefix) {
		return StartExecutionOutput{}, apiErr(CodeInvalidArn, "invalid state machine ARN %q", in.StateMachineArn)
	}
	mname := strings.TrimPrefix(in.StateMachineArn, prefix)
	hash, err := e.store.machineHash(ctx, in.StateMachineArn)
	if errors.Is(err, errNoRow) {
		return StartExecutionOutput{}, apiErr(CodeStateMachineDoesNotExist, "state machine does not exist: %s", in.StateMachineArn)
	}
	if err != nil {
		return StartExecutionOutput{}, err
	}
	m, err := e.machineFor(ctx, hash)
	if err != nil {
		return StartExecutionOutput{}, err
	}
	name := in.Name
	if name == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		name = hex.EncodeToString(b[:])
	}
	if err := validateName(name); err != nil {
		return StartExecutionOutput{}, err
	}
	input := in.Input
	if input == "" {
		input = "{}"
	}
	if len(input) > maxPayload {
		return StartExecutionOutput{}, apiErr(CodeInvalidExecutionInput, "input is larger than %d bytes", maxPayload)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(input)); err != nil {
		return StartExecutionOutput{}, apiErr(CodeInvalidExecutionInput, "input is not valid JSON: %v", err)
	}
	now := e.now()
	arn := e.executionARN(mname, name)
	start := m.States[m.StartAt]
	cur, _ := json.Marshal(cursor{State: m.StartAt, Input: json.RawMessage(compact.Bytes()), EnteredMS: now.UnixMilli()})
	rec := execRecord{ARN: arn, MachineARN: in.StateMachineArn, Name: name, DefHash: hash, Input: compact.String(), Start: now, Cursor: cur}
	started := newEvent{Type: "ExecutionStarted", TS: now, Details: map[string]any{"executionStartedEventDetails": map[string]any{
		"input": compact.String(), "inputDetails": map[string]any{"truncated": false},
		"roleArn": fmt.Sprintf("arn:aws:iam::%s:role/keel-local", e.account)}}}
	got, created, err := e.store.createExecution(ctx, rec, []newEvent{started, enteredEvent(start, compact.Bytes(), now)})
	if err != nil {
		return StartExecutionOutput{}, fmt.Errorf("states: start execution: %w", err)
	}
	if !created {
		if got.Status != StatusRunning || got.Input != compact.String() {
			return StartExecutionOutput{}, apiErr(CodeExecutionAlreadyExists, "Execution Already Exists: '%s'", got.ARN)
		}
		return StartExecutionOutput{ExecutionArn: got.ARN, StartDate: got.Start}, nil
	}
	if err := e.launch(ctx, got); err != nil && !errors.Is(err, errShutdown) {
		return StartExecutionOutput{}, err
	}
	return StartExecutionOutput{ExecutionArn: arn, StartDate: now}, nil
}

// ExecutionDescription is DescribeExecution's response.
type ExecutionDescription struct {
	ExecutionArn, StateMachineArn, Name, Status string
	StartDate                                   time.Time
	StopDate                                    time.Time // zero while running
	Input                                       string
	Output, Error, Cause                        *string
}

// DescribeExecution returns an execution's status, input and outcome.
func (e *Executor) DescribeExecution(ctx context.Context, arn string) (ExecutionDescription, error) {
	rec, err := e.store.execution(ctx, arn)
	if errors.Is(err, errNoRow) {
		return ExecutionDescription{}, apiErr(CodeExecutionDoesNotExist, "Execution Does Not Exist: '%s'", arn)
	}
	if err != nil {
		return ExecutionDescription{}, err
	}
	d := ExecutionDescription{ExecutionArn: rec.ARN, StateMachineArn: rec.MachineARN, Name: rec.Name, Status: rec.Status,
		StartDate: rec.Start, StopDate: rec.Stop, Input: rec.Input}
	if rec.Output.Valid {
		d.Output = &rec.Output.String
	}
	if rec.Error.Valid {
		d.Error = &rec.Error.String
	}
	if rec.Cause.Valid {
		d.Cause = &rec.Cause.String
	}
	return d, nil
}

// StopExecution aborts a running execution; its task tokens stop working.
// Stopping a closed execution is not an error. It returns the stop time.
func (e *Executor) StopExecution(ctx context.Context, arn, errName, cause string) (time.Time, error) {
	now := e.now()
	stopped, err := e.store.stop(ctx, arn, now, errName, cause)
	if errors.Is(err, errNoRow) {
		return time.Time{}, apiErr(CodeExecutionDoesNotExist, "Execution Does Not Exist: '%s'", arn)
	}
	if err != nil {
		return time.Time{}, err
	}
	e.mu.Lock()
	x := e.runs[arn]
	e.mu.Unlock()
	if x != nil {
		x.cancel()
	}
	if !stopped {
		rec, err := e.store.execution(ctx, arn)
		if err != nil {
			return time.Time{}, err
		}
		return rec.Stop, nil
	}
	return now, nil
}

func (e *Executor) tokenError(token string, prev string, err error) error {
	if errors.Is(err, errNoRow) {
		return apiErr(CodeTaskDoesNotExist, "Task Does Not Exist")
	}
	if err != nil {
		return err
	}
	if prev != tokWaiting {
		return apiErr(CodeTaskTimedOut, "Task Timed Out: 'Provided task does not exist anymore'")
	}
	return nil
}

// SendTaskSuccess completes the task waiting on token with output (JSON).
func (e *Executor) SendTaskSuccess(ctx context.Context, token, output string) error {
	if !validToken(token) {
		return apiErr(CodeInvalidToken, "Invalid Token: 'Invalid token'")
	}
	if !json.Valid([]byte(output)) {
		return apiErr(CodeInvalidOutput, "Invalid Output: output is not valid JSON")
	}
	if len(output) > maxPayload {
		return apiErr(CodeInvalidOutput, "output is larger than %d bytes", maxPayload)
	}
	prev, arn, err := e.store.completeToken(ctx, token, tokSucceeded, &output, nil, nil)
	if err := e.tokenError(token, prev, err); err != nil {
		return err
	}
	e.pokeRun(arn)
	return nil
}

// SendTaskFailure fails the task waiting on token with an error name and
// cause, which its Retry and Catch then match.
func (e *Executor) SendTaskFailure(ctx context.Context, token, errName, cause string) error {
	if !validToken(token) {
		return apiErr(CodeInvalidToken, "Invalid Token: 'Invalid token'")
	}
	prev, arn, err := e.store.completeToken(ctx, token, tokFailed, nil, &errName, &cause)
	if err := e.tokenError(token, prev, err); err != nil {
		return err
	}
	e.pokeRun(arn)
	return nil
}

// SendTaskHeartbeat restarts the heartbeat clock of the task waiting on
// token.
func (e *Executor) SendTaskHeartbeat(ctx context.Context, token string) error {
	if !validToken(token) {
		return apiErr(CodeInvalidToken, "Invalid Token: 'Invalid token'")
	}
	status, arn, err := e.store.heartbeat(ctx, token, e.now())
	if err := e.tokenError(token, status, err); err != nil {
		return err
	}
	e.pokeRun(arn)
	return nil
}

// HistoryEvent is one event of an execution's history.
type HistoryEvent struct {
	ID, PreviousEventID int64
	Type                string
	Timestamp           time.Time
	// Details is a JSON object with the event's details member, e.g.
	// {"stateEnteredEventDetails": {...}}, as the API returns it.
	Details json.RawMessage
}

// GetExecutionHistory returns up to limit events starting at offset,
// oldest first unless reverse.
func (e *Executor) GetExecutionHistory(ctx context.Context, arn string, offset, limit int, reverse bool) ([]HistoryEvent, error) {
	if _, err := e.store.execution(ctx, arn); errors.Is(err, errNoRow) {
		return nil, apiErr(CodeExecutionDoesNotExist, "Execution Does Not Exist: '%s'", arn)
	} else if err != nil {
		return nil, err
	}
	evs, err := e.store.history(ctx, arn, offset, limit, reverse)
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEvent, len(evs))
	for i, ev := range evs {
		out[i] = HistoryEvent{ID: ev.ID, PreviousEventID: ev.ID - 1, Type: ev.Type, Timestamp: ev.TS, Details: ev.Details}
	}
	return out, nil
}
