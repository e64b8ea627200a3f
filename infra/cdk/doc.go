// Command cdk is Keel's AWS CDK app: `cdk synth` (make synth) renders one
// CloudFormation stack, `cdk deploy` (make deploy) creates it.
//
// # The app it deploys
//
// Keel is a library: a program calls keel.Main with its agents, and that
// one program serves every role (built once per role with the role's tag,
// which narrows each bootstrap to what its role links). The context key keel:app names the program
// to deploy, a Go main package directory relative to the repository root
// (keel:assetRoot): default ./cmd/keel, the stock app with Keel's research
// agent; `make synth APP=./examples/triage` deploys another. The package
// may live in a module of its own (its own go.mod, e.g. with
// `replace github.com/keelrun/keel => ../..`): the build runs in the
// nearest directory at or above the package that holds a go.mod.
//
// At synth time, before any construct is made, BuildApp runs for each
// ROLE (api, step, approval, finalize, schedule, sweep and task)
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -buildvcs=false \
//	    -tags lambda.norpc,keel_lambda,grpcnotrace,keel_role_ROLE[,keel:buildTags] -ldflags "-s -w" -o DIR/ROLE/bootstrap PKG
//
// in that module root, where DIR is dist/app/<name>-<hash> at the
// repository root (one per keel:app) and PKG the package relative to the
// module root, and writes the task's Dockerfile beside the task's
// binary. The role tag narrows each bootstrap to what its role links (no
// command line, no model SDK in a role that calls no model); each function
// deploys its own, the task image is built from DIR/task. The
// build is reproducible: unchanged sources give the same bytes, hence the
// same asset hashes, and the Go build cache keeps a repeated synth cheap.
// A keel:app that is missing, is not a directory or belongs to no module
// is a configuration error; a failed build stops synthesis with go's
// output; both name keel:app.
//
// The binary's contract: it reads KEEL_ROLE and plays that role.
//
//   - api, step, approval, finalize, schedule, sweep: the Lambda function of
//     that name (provided.al2023, arm64, handler "bootstrap"; all six share one
//     code asset, DIR without the Dockerfile).
//   - task: the long-running Fargate task. Its image is DIR as the Docker
//     build context: the Dockerfile only copies the prebuilt bootstrap into
//     distroless/static as the numeric non-root user 65532. The run comes
//     per execution from RunOnFargate's container overrides: KEEL_RUN_ID
//     and KEEL_TASK_TOKEN (the token to report success, failure and
//     heartbeats with).
//
// Every role also gets KEEL_TABLE and KEEL_BUCKET, keel:environment, and
// where it applies KEEL_STATE_MACHINE_ARN (api, schedule, sweep) and
// KEEL_MODEL_SECRET_ARN (step, task).
//
// # What the stack holds
//
// NewKeelStack composes one constructor per construct, each in its own file:
//
//   - NewStorage: the single DynamoDB table (keys pk/sk and the four
//     run-listing indexes the DynamoDB store queries, on-demand, point-in-time
//     recovery, retained on stack deletion) and the artifact bucket (public
//     access blocked, TLS only, SSE-S3, retained).
//   - NewFunctions: the six Lambda functions (api, step, approval,
//     finalize, schedule, sweep), provided.al2023 on arm64, each with its
//     own role's bootstrap as its code asset and its KEEL_ROLE.
//   - NewSpillTask: the VPC, security group, ECS cluster and the arm64
//     Fargate task definition (container "keel", KEEL_ROLE=task, the image
//     built from the task's bootstrap) that RunOnFargate starts.
//   - NewRunStateMachine: the Standard state machine from
//     stepfunctions/run.asl.json, loaded with DefinitionBody_FromFile, its
//     placeholders filled by CloudFormation through DefinitionSubstitutions.
//   - NewAPI: the HTTP API (IAM auth, or a JWT authorizer when configured)
//     proxying every route to the api function.
//   - NewScheduling: the role EventBridge Scheduler assumes to invoke the
//     schedule function, and one example schedule, disabled by default.
//   - NewSweepSchedule: an EventBridge rule invoking the sweep function
//     every SweepInterval minutes (internal/aws/sweeper).
//
// # Contracts
//
// No resource has a hard-coded physical name: CloudFormation generates them
// and the functions learn them from KEEL_TABLE, KEEL_BUCKET and
// KEEL_STATE_MACHINE_ARN, so one account can hold several stacks. Every
// permission is a Grant* call on the resource it concerns (no managed
// full-access policies, no "*" actions); the table and the bucket survive
// stack deletion. Synthesis makes no context lookups and needs neither AWS
// credentials nor network (beyond the Go module proxy for the app's
// dependencies, when the module cache lacks them) nor Docker: the stack is
// environment-agnostic by default (CloudFormation resolves the account,
// region and availability zones at deploy time) and the Fargate image is a
// Docker build asset that cdk deploy builds. Configuration comes from CDK context (keel:* keys, see
// config.go), validated before any construct is made.
package main
