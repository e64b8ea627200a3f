// Package compose is Keel's one composition root: from one configuration
// (internal/config) and one [App] (the agents a program brings through the
// public package), it opens the store, the artifact store and the models
// ([Open]) and builds every role of the one binary — the Lambda roles
// (api, step, approval, finalize, schedule: [NewAPI] ... [NewSchedule],
// served by [ServeLambda]), the long-running task ([RunTask]) and the
// parts `keel dev` runs (internal/local/devserver takes a [Runtime]). A
// process's entry (internal/cli) only reads the configuration and asks
// for its Deps: [LambdaDeps] builds a function's AWS clients from its
// environment, [TaskDeps] the task's. Because every role is built here
// from the same values, the dev server and the AWS functions cannot
// drift: Finalize writes the debug bundle in both.
//
// Contracts:
//
//   - Constructors take their dependencies ([Deps]: the configuration,
//     the app, the backends, the Step Functions client) and never read the
//     environment, so tests point them at SQLite, at DynamoDB and S3 test
//     servers, or at `keel dev`'s local Step Functions endpoint.
//   - A constructed function keeps its store open for the life of the
//     Lambda sandbox; Close releases it (tests call it, Lambda never does).
//   - Errors Step Functions must route reach aws-lambda-go unwrapped:
//     *harness.RetryableError and *harness.FencedError keep their type, so
//     aws-lambda-go reports errorType "RetryableError" / "FencedError",
//     which stepfunctions/run.asl.json matches in Retry and Catch. Any other
//     error is States.ALL there: the Step is finalized as failed.
//   - The api role serves internal/api unchanged behind internal/aws/apigw:
//     the principal is the API Gateway authorizer's.
package compose
