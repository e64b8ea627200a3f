// Package awsbackend builds Keel's AWS-facing parts from an injected
// aws.Config: the openers of the DynamoDB store and the S3 artifact store
// (so KEEL_STORE=dynamo:TABLE and KEEL_ARTIFACTS=s3:BUCKET work in every
// role), and the Step Functions client
// (internal/aws/sfnclient) for starting executions and answering task
// tokens.
//
// Contracts:
//
//   - Nothing here loads configuration: the caller (a main package) calls
//     config.LoadDefaultConfig, or for a Lambda function EnvConfig (the
//     function's environment only: region, credentials, endpoints), and
//     passes the result, so the same code talks to AWS, to LocalStack, or
//     to a test server through BaseEndpoint (AWS_ENDPOINT_URL).
//   - Backends makes no request until a store is opened, and opening makes
//     none either: the table and the bucket must exist (dynamo.CreateTable,
//     the CDK stack, or LocalStack's init hook create them).
//   - Clients retry throttling and transient errors with the SDK's standard
//     retryer; the stores map AWS errors to their sentinels at their seam.
package awsbackend
