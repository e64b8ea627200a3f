// Package sfnclient is the small Step Functions client Keel's approval
// flow, Rollover and the long-running (Fargate) task use: start an
// execution, and answer a task token with success, failure or a heartbeat.
//
// It wraps aws-sdk-go-v2/service/sfn (the client is injected, so the same
// code talks to AWS, LocalStack or `keel dev`'s local Step Functions
// endpoint through BaseEndpoint) and translates AWS error codes into this
// package's sentinel errors at the seam, so callers never match AWS types:
//
//	ExecutionAlreadyExists     ErrExecutionAlreadyExists
//	StateMachineDoesNotExist   ErrStateMachineDoesNotExist
//	TaskTimedOut               ErrTaskTimedOut (the task no longer waits: timed out, or already answered)
//	TaskDoesNotExist           ErrTaskDoesNotExist
//	InvalidToken               ErrInvalidToken
//	InvalidArn, InvalidName,
//	InvalidExecutionInput,
//	InvalidOutput              ErrInvalid
//
// The returned error wraps both the sentinel and the SDK's error, so the
// AWS request id stays available to logs.
//
// Idempotency: StartExecution of a Standard state machine with the same
// name and input while the execution runs returns the same execution ARN
// (AWS's documented behaviour), which is what makes "StartExecution(name =
// run id)" safe to retry. Another input, or a name whose execution has
// closed, is ErrExecutionAlreadyExists.
//
// Throttling and transient errors are retried by the SDK's retryer.
package sfnclient
