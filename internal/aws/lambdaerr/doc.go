// Package lambdaerr names errors the way Step Functions sees them from a
// Lambda function written with aws-lambda-go, so the local executor
// (internal/aws/states), the long-running task's SendTaskFailure
// (internal/aws/roles) and AWS agree on the names Retry and Catch match.
package lambdaerr
