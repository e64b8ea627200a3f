// Package entry constructs Keel's AWS entrypoints: the five Lambda
// functions under functions/ (api, step, approval, finalize, schedule) and
// the Fargate task under tasks/fargate. Each main package only reads the
// environment ([FromEnv]), loads the AWS configuration, calls a constructor
// here and hands the result to lambda.Start (or runs the task); everything
// that can be wrong is here, where tests reach it.
//
// Contracts:
//
//   - Constructors take their dependencies ([Deps]: the runtime
//     configuration, the store/artifact/model hooks, the Step Functions
//     client) and never load configuration themselves, so tests point them
//     at SQLite, at DynamoDB and S3 test servers, or at `keel dev`'s local
//     Step Functions endpoint.
//   - A constructed function keeps its store open for the life of the
//     Lambda sandbox; Close releases it (tests call it, Lambda never does).
//   - Errors Step Functions must route reach aws-lambda-go unwrapped:
//     *harness.RetryableError and *harness.FencedError keep their type, so
//     aws-lambda-go reports errorType "RetryableError" / "FencedError",
//     which stepfunctions/run.asl.json matches in Retry and Catch. Any other
//     error is States.ALL there: the Step is finalized as failed.
//   - The API function serves internal/api unchanged. The principal is the
//     API Gateway authorizer's: the IAM caller's ARN
//     (requestContext.authorizer.iam.userArn) or the JWT's "sub" claim; a
//     request without either gets 401. Responses are returned whole (API
//     Gateway buffers Lambda responses), so an SSE request answers with the
//     events of up to [Env].StreamMax and a retry hint, and the client
//     resumes from Last-Event-ID: long polling over the same protocol.
package entry
