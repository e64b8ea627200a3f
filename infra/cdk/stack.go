package main

import (
	"fmt"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// KeelStackProps configures NewKeelStack. Zero values take the documented
// defaults; Validate reports what is missing before any construct is made.
type KeelStackProps struct {
	awscdk.StackProps

	// AssetRoot is the repository root: the state machine comes from
	// AssetRoot/stepfunctions/run.asl.json, and a relative App is relative
	// to it.
	AssetRoot string

	// App is the Keel program to deploy (keel:app): the directory of a Go
	// main package calling keel.Main, relative to AssetRoot unless
	// absolute, possibly in a module of its own. Default DefaultApp
	// (./cmd/keel). BuildApp compiles it for linux/arm64 once per role
	// with that role's tag: each function deploys its role's bootstrap and
	// the Fargate image is the task's on distroless, each with its
	// KEEL_ROLE.
	App string
	// BuildDir, when set, is where BuildApp writes the bootstraps and the
	// task Dockerfile (see AppDir for the default). Tests point it at a
	// temporary directory.
	BuildDir string
	// BuildTags are go build tags added to BaseBuildTags (keel:buildTags,
	// comma-separated), e.g. keel_no_openai,keel_no_anthropic to leave
	// out the model providers the program does not use.
	BuildTags []string

	// TaskImage, when set, is an image URI the Fargate task pulls instead
	// of the image built from App's binary (then deploying needs no
	// Docker). It must be an arm64 image whose entrypoint runs the task
	// role (the container gets KEEL_ROLE=task).
	TaskImage string
	// TaskCPU and TaskMemoryMiB size the Fargate task (a valid Fargate
	// combination). Defaults: 1024 (1 vCPU) and 2048.
	TaskCPU       int
	TaskMemoryMiB int

	// CommandRunner deploys the command runner (NewCommandRunner) and
	// points the step function and the Fargate task at it, so agents
	// with Workspace.Commands run their commands there. Default false:
	// such agents do not start on AWS.
	CommandRunner bool
	// S3PrefixListID narrows the runner's egress to S3's prefix list
	// (CommandRunnerProps.S3PrefixListID).
	S3PrefixListID string

	// NATGateways is the number of NAT gateways the Fargate task leaves
	// through. Default 0: the task runs in public subnets with a public
	// IPv4 address and no inbound rule, and the deployment has nothing
	// billed by the hour (see NewSpillTask). 1 gives the task private
	// subnets and fixed egress addresses (the gateway's Elastic IP) for
	// providers that allow-list them, at about $0.045/h plus $0.005/h for
	// the address in us-east-1; 2 keeps that egress up when one
	// availability zone fails.
	NATGateways int
	// AvailabilityZones, when set, are the two zones of the VPC. Default:
	// the region's first two, resolved by CloudFormation (Fn::GetAZs), so
	// synthesis makes no lookup.
	AvailabilityZones []string

	// JWTIssuer and JWTAudience switch the HTTP API from IAM (SigV4) auth to
	// a JWT authorizer; both must be set together.
	JWTIssuer   string
	JWTAudience []string

	// ModelSecretName names a Secrets Manager secret holding model provider
	// credentials. The step function and the Fargate task may read it and
	// get its ARN as KEEL_MODEL_SECRET_ARN; the secret's value never enters
	// the template or an environment variable.
	ModelSecretName string
	// AppSecretNames name Secrets Manager secrets the program reads itself
	// (an MCP server's token through the awssecret package): every
	// function and the Fargate task may read them, as each builds the
	// agents. Their values never enter the template.
	AppSecretNames []string
	// Environment adds variables to every function and the Fargate task
	// (KEEL_MODEL, KEEL_SPILL_TOOLS, an agent's own RESEARCH_PUBLISH...:
	// internal/config reads the same ones everywhere, and refuses a KEEL_*
	// name it does not know). Never put a secret here: the values are
	// visible in the template and the console.
	Environment map[string]string

	// Schedule configures the example schedule.
	Schedule ExampleSchedule
}

// DefinitionFile is the state machine definition.
func (p KeelStackProps) DefinitionFile() string {
	return filepath.Join(p.AssetRoot, "stepfunctions", "run.asl.json")
}

// Defaults for zero-valued props.
const (
	defaultTaskCPU       = 1024
	defaultTaskMemoryMiB = 2048
)

// KeelStack is the synthesized stack and the constructs it composes, so
// tests and other stacks can reach them.
type KeelStack struct {
	awscdk.Stack
	Storage   *Storage
	Functions *Functions
	Spill     *SpillTask
	Run       *RunStateMachine
	API       *API
	Schedule  *Scheduling
	Sweep     *SweepSchedule
	// Commands is the command runner; nil unless props.CommandRunner.
	Commands *CommandRunner
}

// NewKeelStack builds Keel's stack. props must have passed Validate and
// BuildApp must have written the app to props.AppDir(): like every CDK
// construct, an invalid input (a missing asset) aborts synthesis.
func NewKeelStack(scope constructs.Construct, id string, props KeelStackProps) awscdk.Stack {
	return newKeelStack(scope, id, props).Stack
}

func newKeelStack(scope constructs.Construct, id string, props KeelStackProps) *KeelStack {
	props = props.withDefaults()
	sprops := props.StackProps
	if sprops.Description == nil {
		sprops.Description = jsii.String("Keel: durable runtime for long-running AI agents")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sprops)
	pinAvailabilityZones(stack, sprops.Env, props.AvailabilityZones)

	storage := NewStorage(stack, "Storage")
	modelSecret := modelSecret(stack, props.ModelSecretName)
	fns := NewFunctions(stack, "Functions", FunctionsProps{
		CodeDir:     props.AppDir(),
		Table:       storage.Table,
		Bucket:      storage.Bucket,
		ModelSecret: modelSecret,
		Environment: props.Environment,
	})
	spill := NewSpillTask(stack, "Spill", SpillTaskProps{
		ImageDir:          RoleDir(props.AppDir(), RoleTask),
		Image:             props.TaskImage,
		CPU:               props.TaskCPU,
		MemoryMiB:         props.TaskMemoryMiB,
		NATGateways:       props.NATGateways,
		AvailabilityZones: props.AvailabilityZones,
		Table:             storage.Table,
		Bucket:            storage.Bucket,
		ModelSecret:       modelSecret,
		Environment:       props.Environment,
	})
	run := NewRunStateMachine(stack, "Run", RunStateMachineProps{
		DefinitionFile: props.DefinitionFile(),
		Step:           fns.Step,
		StepLive:       publishStep(stack, fns),
		Approval:       fns.Approval,
		Finalize:       fns.Finalize,
		Spill:          spill,
	})

	// The api and schedule functions may depend on the state machine (its
	// ARN in their environment) without a cycle.
	sm := run.StateMachine
	for _, fn := range []awslambda.Function{fns.API, fns.Schedule, fns.Sweep} {
		fn.AddEnvironment(jsii.String(EnvStateMachineArn), sm.StateMachineArn(), nil)
		sm.GrantStartExecution(fn)
	}
	// The API reads executions (status, history for debugging) and resumes
	// an approval wait with the recorded task token.
	sm.GrantRead(fns.API)
	sm.GrantTaskResponse(fns.API)
	// The sweeper describes executions and starts missing ones, and
	// delivers a decision whose wake was lost through the approval's task
	// token; a rule invokes it every SweepInterval.
	sm.GrantRead(fns.Sweep)
	sm.GrantTaskResponse(fns.Sweep)
	sweep := NewSweepSchedule(stack, "Sweep", SweepScheduleProps{Function: fns.Sweep})
	// The Fargate task reports its decision, failure and heartbeats through
	// the task token RunOnFargate hands it.
	sm.GrantTaskResponse(spill.TaskDefinition.TaskRole())

	api := NewAPI(stack, "Api", APIProps{
		Handler:     fns.API,
		JWTIssuer:   props.JWTIssuer,
		JWTAudience: props.JWTAudience,
	})
	sched := NewScheduling(stack, "Scheduling", SchedulingProps{
		Function: fns.Schedule,
		Example:  props.Schedule,
	})

	commands := addCommandRunner(stack, props, storage, fns, spill)
	grantAppSecrets(stack, props.AppSecretNames, fns, spill)
	ks := &KeelStack{Stack: stack, Storage: storage, Functions: fns, Spill: spill, Run: run, API: api, Schedule: sched, Sweep: sweep, Commands: commands}
	addOutputs(ks)
	return ks
}

// addOutputs names what an operator needs from the deployed stack.
func addOutputs(ks *KeelStack) {
	output := func(id string, value *string, desc string) {
		awscdk.NewCfnOutput(ks.Stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	output("ApiUrl", ks.API.HTTPAPI.ApiEndpoint(), "HTTP API endpoint (IAM or JWT auth)")
	output("TableName", ks.Storage.Table.TableName(), "DynamoDB table (KEEL_TABLE)")
	output("BucketName", ks.Storage.Bucket.BucketName(), "artifact bucket (KEEL_BUCKET)")
	output("StateMachineArn", ks.Run.StateMachine.StateMachineArn(), "run state machine (KEEL_STATE_MACHINE_ARN)")
	output("SchedulerRoleArn", ks.Schedule.Role.RoleArn(), "role for further EventBridge Scheduler schedules that target ScheduleFunctionArn")
	output("ScheduleFunctionArn", ks.Functions.Schedule.FunctionArn(), "the function schedules invoke")
}

func (p KeelStackProps) withDefaults() KeelStackProps {
	if p.TaskCPU == 0 {
		p.TaskCPU = defaultTaskCPU
	}
	if p.TaskMemoryMiB == 0 {
		p.TaskMemoryMiB = defaultTaskMemoryMiB
	}
	if p.App == "" {
		p.App = DefaultApp
	}
	p.Schedule = p.Schedule.withDefaults()
	return p
}

// modelSecret references the model credentials secret by name (no lookup:
// the ARN ends in the wildcard Secrets Manager appends), or nil.
func modelSecret(scope constructs.Construct, name string) awssecretsmanager.ISecret {
	if name == "" {
		return nil
	}
	return awssecretsmanager.Secret_FromSecretNameV2(scope, jsii.String("ModelSecret"), jsii.String(name))
}

// grantAppSecrets lets every function and the task read the program's own
// secrets, referenced by name as the model secret is.
func grantAppSecrets(scope constructs.Construct, names []string, fns *Functions, spill *SpillTask) {
	for i, name := range names {
		sec := awssecretsmanager.Secret_FromSecretNameV2(scope, jsii.String(fmt.Sprintf("AppSecret%d", i)), jsii.String(name))
		for _, fn := range []awslambda.Function{fns.API, fns.Step, fns.Approval, fns.Finalize, fns.Schedule, fns.Sweep} {
			sec.GrantRead(fn, nil)
		}
		sec.GrantRead(spill.TaskDefinition.TaskRole(), nil)
	}
}

// pinAvailabilityZones answers the availability-zones context query of an
// environment-specific stack with the configured zones. Without it the VPC,
// checking its zones against the stack's, would make the CLI look them up
// with credentials. It must run before the stack has children.
func pinAvailabilityZones(stack awscdk.Stack, env *awscdk.Environment, zones []string) {
	if env == nil || env.Account == nil || env.Region == nil || len(zones) == 0 {
		return
	}
	if *awscdk.Token_IsUnresolved(env.Account) || *awscdk.Token_IsUnresolved(env.Region) {
		return
	}
	key := "availability-zones:account=" + *env.Account + ":region=" + *env.Region
	stack.Node().SetContext(jsii.String(key), jsii.Strings(zones...))
}

// addCommandRunner deploys the command runner when props ask for it and
// points the step function and the task at it; nil otherwise.
func addCommandRunner(stack awscdk.Stack, props KeelStackProps, storage *Storage, fns *Functions, spill *SpillTask) *CommandRunner {
	if !props.CommandRunner {
		return nil
	}
	commands := NewCommandRunner(stack, "Commands", CommandRunnerProps{
		CodeDir: RoleDir(props.AppDir(), RoleCommands), Bucket: storage.Bucket,
		AvailabilityZones: props.AvailabilityZones, S3PrefixListID: props.S3PrefixListID,
	})
	commands.Serve([]awslambda.Function{fns.Step}, spill)
	// What runners upload is read back and copied by the workers; the
	// staging copies are not records.
	storage.Bucket.AddLifecycleRule(&awss3.LifecycleRule{Id: jsii.String("workspace-staging"),
		Prefix: jsii.String("workspace-staging/"), Expiration: awscdk.Duration_Days(jsii.Number(1))})
	return commands
}
