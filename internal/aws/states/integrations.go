package states

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/keelrun/keel/internal/aws/lambdaerr"
)

// LambdaFunc is an in-process Lambda handler: the function a Lambda
// entrypoint wraps. The executor calls it for lambda:invoke with the
// Payload parameter as JSON and wraps its result the way the Step
// Functions Lambda integration does ({"Payload": ..., "StatusCode": 200}).
type LambdaFunc func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error)

// TaskRunner starts what ecs:runTask would start. params is the task
// state's effective Parameters (Cluster, TaskDefinition, Overrides, ...).
// RunTask returns once the task is started; with .waitForTaskToken the task
// itself reports back through SendTaskSuccess/Failure/Heartbeat.
type TaskRunner interface {
	RunTask(ctx context.Context, params json.RawMessage) error
}

func (e *Executor) callIntegration(ctx context.Context, x *execRun, res Integration, params json.RawMessage) (any, *StateError) {
	switch res {
	case LambdaInvoke, LambdaInvokeWithToken:
		// The wait for a slot counts against the task's timeout, as a
		// throttled invocation's does on AWS.
		if err := e.slots.acquire(ctx, x.rec.Start); err != nil {
			return nil, &StateError{Name: ErrRuntime, Cause: "no invocation slot: " + err.Error()}
		}
		defer e.slots.release()
		return e.invokeLambda(ctx, params)
	case ECSRunTask, ECSRunTaskWithToken:
		if e.tasks == nil {
			return nil, &StateError{Name: "ECS.AmazonECSException", Cause: "no TaskRunner configured for ecs:runTask"}
		}
		if err := e.tasks.RunTask(ctx, params); err != nil {
			return nil, &StateError{Name: "ECS.AmazonECSException", Cause: err.Error()}
		}
		return map[string]any{"Tasks": []any{}, "Failures": []any{}}, nil
	case StartExecution:
		return e.startChild(ctx, x, params)
	}
	return nil, &StateError{Name: ErrRuntime, Cause: fmt.Sprintf("unsupported resource %s", res)}
}

func (e *Executor) invokeLambda(ctx context.Context, params json.RawMessage) (any, *StateError) {
	var p struct {
		FunctionName string
		Payload      json.RawMessage
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &StateError{Name: "Lambda.InvalidParameterValueException", Cause: err.Error()}
	}
	fn, ok := e.lambdas[p.FunctionName]
	if !ok && e.named != nil {
		fn, ok = e.named(p.FunctionName)
	}
	if !ok {
		return nil, &StateError{Name: ErrLambdaNotFound, Cause: "Function not found: " + p.FunctionName}
	}
	payload := p.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	out, err := callHandler(ctx, fn, payload)
	if err != nil {
		name := lambdaerr.Type(err)
		if hp, ok := err.(*handlerPanicError); ok {
			name = lambdaerr.Type(hp.v) // as aws-lambda-go names a panic
			// The state's error carries the message only; the stack is for
			// whoever reads the process's log.
			e.log.ErrorContext(ctx, "lambda handler panicked", "function", p.FunctionName, "panic", fmt.Sprint(hp.v), "stack", string(hp.stack))
		}
		cause, _ := json.Marshal(map[string]any{"errorMessage": err.Error(), "errorType": name})
		return nil, &StateError{Name: name, Cause: string(cause)}
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if !json.Valid(out) {
		return nil, &StateError{Name: "Lambda.InvalidResponse", Cause: "the function returned invalid JSON"}
	}
	var reqID [16]byte
	_, _ = rand.Read(reqID[:])
	wrapped, err := json.Marshal(map[string]any{
		"ExecutedVersion":     "$LATEST",
		"Payload":             out,
		"SdkHttpMetadata":     map[string]any{"HttpStatusCode": 200},
		"SdkResponseMetadata": map[string]any{"RequestId": hex.EncodeToString(reqID[:])},
		"StatusCode":          200,
	})
	if err != nil {
		return nil, &StateError{Name: "Lambda.InvalidResponse", Cause: err.Error()}
	}
	v, err := decodeJSON(wrapped)
	if err != nil {
		return nil, &StateError{Name: "Lambda.InvalidResponse", Cause: err.Error()}
	}
	return v, nil
}

// handlerPanicError reports a handler panic as a Lambda function error
// instead of crashing the executor; stack is where it panicked.
type handlerPanicError struct {
	v     any
	stack []byte
}

func (p *handlerPanicError) Error() string { return fmt.Sprintf("handler panic: %v", p.v) }

func callHandler(ctx context.Context, fn LambdaFunc, payload json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &handlerPanicError{v: r, stack: debug.Stack()}
		}
	}()
	return fn(ctx, payload)
}

func (e *Executor) startChild(ctx context.Context, x *execRun, params json.RawMessage) (any, *StateError) {
	var p struct {
		StateMachineArn string
		Name            string
		Input           json.RawMessage
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &StateError{Name: "StepFunctions.InvalidExecutionInputException", Cause: err.Error()}
	}
	input := string(p.Input)
	var s string
	if json.Unmarshal(p.Input, &s) == nil {
		input = s // Input given as a JSON string is passed as is
	}
	if input == "" {
		input = "{}"
	}
	out, err := e.StartExecution(ctx, StartExecutionInput{StateMachineArn: p.StateMachineArn, Name: p.Name, Input: input})
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			name := "StepFunctions." + ae.Code
			if ae.Code == CodeExecutionAlreadyExists {
				name = ErrExecutionAlreadyExist
			}
			return nil, &StateError{Name: name, Cause: ae.Message}
		}
		return nil, &StateError{Name: "StepFunctions.SdkClientException", Cause: err.Error()}
	}
	return map[string]any{"ExecutionArn": out.ExecutionArn, "StartDate": out.StartDate.UTC().Format(timeLayout)}, nil
}
