// Package awslocal runs Keel's deployed topology on this machine: moto
// (DynamoDB, S3, Lambda, Step Functions with its own States-Language
// interpreter) and the AWS Lambda Runtime Interface Emulator (aws-lambda-rie)
// serving the real bootstrap binary — the one Keel program, KEEL_ROLE per
// function — on the real Lambda Runtime API.
//
// The resources are made from the synthesized CloudFormation template
// (infra/cdk, `make synth`): the table, the bucket, the Lambda functions
// (their environment) and the state machine (its definition asset and
// DefinitionSubstitutions) are read from it and resolved the way
// CloudFormation resolves Ref, Fn::GetAtt, Fn::Join and Fn::Sub, never
// re-typed. Only the Lambda container start is replaced: moto would start a
// Docker container per invocation; launcher/moto_rie.py (a documented patch
// of that one method) POSTs the event to the function's emulator instead.
//
// The same stack can run under Keel's own executor (internal/states, what
// `keel dev` runs) instead of moto's interpreter: the functions, table and
// bucket are the same, only the Step Functions endpoint differs. The
// scenarios of TestAWSLocal run under both, and the states each execution
// entered, in order, with the step decisions, must agree.
//
// Resources of the template that no scenario can exercise in moto — the
// Fargate spill (VPC, cluster, task definition: ecs:runTask.waitForTaskToken
// is not in moto's engine), log groups, IAM, the HTTP API (its event is
// built as API Gateway builds it) and the Scheduler schedule (its target
// input is delivered as Scheduler delivers it) — are not created; their
// Refs resolve to CloudFormation-shaped physical ids.
package awslocal
