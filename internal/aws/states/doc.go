// Package states is Keel's local executor for the subset of the Amazon
// States Language that stepfunctions/run.asl.json uses, so that `keel dev`
// runs the very definition CDK deploys to AWS Step Functions.
//
// # Subset
//
// Load accepts JSONPath definitions with Task, Choice, Wait, Pass, Succeed
// and Fail states; InputPath, Parameters (paths, $$ context paths and the
// intrinsics States.Format, StringToJson, JsonToString, Array,
// ArrayLength, ArrayGetItem, MathAdd, StringSplit), ResultSelector,
// ResultPath, OutputPath; Choice rules with string, numeric, boolean and
// timestamp comparisons (and their ...Path forms), StringMatches, the Is*
// type tests, And, Or, Not; Retry (ErrorEquals, IntervalSeconds,
// MaxAttempts, BackoffRate, MaxDelaySeconds, JitterStrategy) and Catch;
// TimeoutSeconds[Path] and HeartbeatSeconds[Path]. Task resources are
// lambda:invoke[.waitForTaskToken], ecs:runTask[.waitForTaskToken] and
// states:startExecution. Anything else — Map, Parallel, JSONata, Assign,
// Credentials, other resources, unknown fields — is a *LoadError that
// names the state and field; nothing is silently ignored. ${Name}
// placeholders are replaced like CDK's DefinitionSubstitutions.
//
// # Semantics
//
// Input and output processing, retries and catchers follow the
// specification. States.ALL matches every error but States.Runtime and
// States.DataLimitExceeded, which end the execution. States.TaskFailed
// matches everything States.ALL does except timeouts. A heartbeat timeout
// is reported as States.HeartbeatTimeout and is also matched by
// States.Timeout. Parameters, ResultSelector and ResultPath failures in a
// Task go through its Retry and Catch; InputPath/OutputPath and Choice
// failures are States.Runtime. A Task without TimeoutSeconds has no
// timeout (Step Functions' behaviour, not the specification's 60 s).
// Lambda errors are named as aws-lambda-go names them (lambdaerr.Type, tested
// against a real aws-lambda-go function): a messages.InvokeResponse_Error's
// Type, else the Go type name without the pointer; never an ErrorType()
// method, which aws-lambda-go does not honour.
//
// # Durability
//
// Every durable transition is one SQLite transaction (tables prefixed
// sfn_) that appends the history events and moves the execution's cursor.
// Transitions that running again from the persisted cursor would take the
// same way (out of Pass and Choice, into a tokenless task attempt, out of
// a task whose token's row holds its outcome) and a task's outcome
// followed only by pure states wait in memory for the next one, which is
// always made before the next invocation, token, wait or retry: a crash in
// between invokes the task again, as a crash during its call does. Start
// resumes every RUNNING execution: a Wait keeps its absolute end time, a
// task token stays valid (its outcome and heartbeats are stored with it),
// a retry keeps its absolute due time, and a task that was in flight when
// the process died is invoked again — at least once, as on AWS. History is
// counted as Step Functions counts it, and the event that would be number
// 25,000 is replaced by ExecutionFailed with States.Runtime, so a missing
// rollover fails locally too.
//
// # API
//
// NewHandler serves StartExecution, DescribeExecution, StopExecution,
// SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat and
// GetExecutionHistory over the AWS JSON 1.0 protocol, for the
// aws-sdk-go-v2 sfn client through BaseEndpoint. StartExecution is
// idempotent as on AWS: the same name and input as a RUNNING execution
// return it; a different input, or a name whose execution has closed, is
// ExecutionAlreadyExists. A token of a closed task is TaskTimedOut, an
// unknown one TaskDoesNotExist, a malformed one InvalidToken.
//
// Config.MaxInvocations bounds the Lambda handlers running at once, a free
// slot going to the execution that started first (the wait counts against
// the task's timeout); a handler must then not wait for another
// execution's handler.
//
// One Executor drives a database's executions at a time: a second process
// on the same file would run them twice.
//
// All time goes through a Clock and all jitter through Config.Rand, so
// tests never sleep.
package states
