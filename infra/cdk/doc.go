// Command cdk is Keel's AWS CDK app: `cdk synth` (make synth) renders one
// CloudFormation stack, `cdk deploy` (make deploy) creates it.
//
// # What the stack holds
//
// NewKeelStack composes one constructor per construct, each in its own file:
//
//   - NewStorage: the single DynamoDB table (keys pk/sk and the four
//     run-listing indexes the DynamoDB store queries, on-demand, point-in-time
//     recovery, retained on stack deletion) and the artifact bucket (public
//     access blocked, TLS only, SSE-S3, retained).
//   - NewFunctions: the five Lambda functions (api, step, approval,
//     finalize, schedule), provided.al2023 on arm64, code from
//     dist/<name>/bootstrap at the repository root (make build-<name>).
//   - NewSpillTask: the VPC, security group, ECS cluster and the arm64
//     Fargate task definition (container "keel") that RunOnFargate starts.
//   - NewRunStateMachine: the Standard state machine from
//     stepfunctions/run.asl.json, loaded with DefinitionBody_FromFile, its
//     placeholders filled by CloudFormation through DefinitionSubstitutions.
//   - NewAPI: the HTTP API (IAM auth, or a JWT authorizer when configured)
//     proxying every route to the api function.
//   - NewScheduling: the role EventBridge Scheduler assumes to invoke the
//     schedule function, and one example schedule, disabled by default.
//
// # Contracts
//
// No resource has a hard-coded physical name: CloudFormation generates them
// and the functions learn them from KEEL_TABLE, KEEL_BUCKET and
// KEEL_STATE_MACHINE_ARN, so one account can hold several stacks. Every
// permission is a Grant* call on the resource it concerns (no managed
// full-access policies, no "*" actions); the table and the bucket survive
// stack deletion. Synthesis makes no context lookups and needs neither AWS
// credentials nor network nor Docker: the stack is environment-agnostic by
// default (CloudFormation resolves the account, region and availability
// zones at deploy time) and the Fargate image is a Docker build asset that
// cdk deploy builds. Configuration comes from CDK context (keel:* keys, see
// config.go), validated before any construct is made.
package main
