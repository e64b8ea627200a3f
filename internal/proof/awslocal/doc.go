// Package awslocal runs Keel's deployed topology on this machine and
// plays the same scenarios on it wherever it is deployed: a Target is the
// AWS look-alike, and everything else is one code path.
//
// MotoTarget: moto (DynamoDB, S3, Lambda, Step Functions with its own
// States-Language interpreter) and the AWS Lambda Runtime Interface
// Emulator (aws-lambda-rie) serving the real bootstrap binary — the one
// Keel program, KEEL_ROLE per function — on the real Lambda Runtime API.
// Only the Lambda container start is replaced: moto would start a Docker
// container per invocation; launcher/moto_rie.py (a documented patch of
// that one method) POSTs the event to the function's emulator instead.
//
// LocalStackTarget: LocalStack running the functions in its own Lambda
// containers from the template's code asset (a linux zip on
// provided.al2023), the scenarios' servers on the Docker bridge gateway
// those containers route to, mid-step kills through the docker CLI. It
// needs a Docker engine and LOCALSTACK_AUTH_TOKEN, and has never run where
// it was written (see the README, "Run the AWS shape locally").
//
// The resources are made from the synthesized CloudFormation template
// (infra/cdk, `make synth`) in the order Plan gives: the table, the
// bucket, the roles, the Lambda functions (their environment) and the
// state machine (its definition asset and DefinitionSubstitutions) are
// read from it and resolved the way CloudFormation resolves Ref,
// Fn::GetAtt, Fn::Join and Fn::Sub, never re-typed.
//
// The same stack can run under Keel's own executor (internal/aws/states, what
// `keel dev` runs) instead of the target's interpreter: the functions,
// table and bucket are the same, only the Step Functions endpoint differs.
// The scenarios run under both, and the states each execution entered, in
// order, with the step decisions, must agree.
//
// Resources of the template that no scenario can exercise — the Fargate
// spill (VPC, cluster, task definition: ecs:runTask.waitForTaskToken is
// in neither moto's engine nor LocalStack community), log groups, IAM
// policies, the HTTP API (its event is built as API Gateway builds it)
// and the Scheduler schedule (its target input is delivered as Scheduler
// delivers it) — are not created (Plan says why for each type); their
// Refs resolve to CloudFormation-shaped physical ids.
package awslocal
