package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The environment the functions and the Fargate task read their resources
// from. Names only: no credential is ever passed this way.
const (
	EnvTable           = "KEEL_TABLE"
	EnvBucket          = "KEEL_BUCKET"
	EnvStateMachineArn = "KEEL_STATE_MACHINE_ARN"
	EnvModelSecretArn  = "KEEL_MODEL_SECRET_ARN"
)

// functionSpec is one Lambda function: a role of the app's binary.
type functionSpec struct {
	Name        string // the role: KEEL_ROLE
	ID          string // construct id
	Description string
	TimeoutSec  float64
	MemoryMiB   float64
	// PutArtifacts: the function writes to the bucket (all may read it:
	// large checkpoints live there).
	PutArtifacts bool
	// Model: the function calls models, so it may read the model secret.
	Model bool
}

// functionSpecs lists the entrypoints in creation order. Timeouts: the
// HTTP API gives an integration at most 30 s; step runs harness iterations
// until its own time budget, below Lambda's 15-minute bound and the
// Step state's 960 s timeout in run.asl.json.
func functionSpecs() []functionSpec {
	return []functionSpec{
		{Name: "api", ID: "Api", Description: "Keel HTTP API", TimeoutSec: 29, MemoryMiB: 512, PutArtifacts: true},
		{Name: "step", ID: "Step", Description: "Keel harness step", TimeoutSec: 900, MemoryMiB: 1024, PutArtifacts: true, Model: true},
		{Name: "approval", ID: "Approval", Description: "Keel approval wait: records the task token", TimeoutSec: 30, MemoryMiB: 256},
		{Name: "finalize", ID: "Finalize", Description: "Keel run finalization and debug bundle", TimeoutSec: 300, MemoryMiB: 512, PutArtifacts: true},
		{Name: "schedule", ID: "Schedule", Description: "Keel scheduled run creation", TimeoutSec: 30, MemoryMiB: 256},
		{Name: "sweep", ID: "Sweep", Description: "Keel sweeper: repairs runs whose execution is missing or ended", TimeoutSec: 300, MemoryMiB: 256},
	}
}

// FunctionNames are the Lambda functions the stack deploys, each the
// app's binary with KEEL_ROLE set to its name.
func FunctionNames() []string {
	var names []string
	for _, s := range functionSpecs() {
		names = append(names, s.Name)
	}
	return names
}

// FunctionsProps configures NewFunctions.
type FunctionsProps struct {
	// CodeDir is BuildApp's AppDir: each function's code asset is its
	// role's directory under it (RoleDir), its bootstrap and nothing else.
	CodeDir     string
	Table       awsdynamodb.ITable
	Bucket      awss3.IBucket
	ModelSecret awssecretsmanager.ISecret // may be nil; read by step only
	Environment map[string]string         // added to every function
}

// Functions are Keel's Lambda entrypoints. They run outside the VPC: they
// reach DynamoDB, S3, Step Functions and model providers through public
// endpoints, so a NAT outage cannot stop them.
type Functions struct {
	constructs.Construct
	API, Step, Approval, Finalize, Schedule, Sweep awslambda.Function
}

// NewFunctions creates the functions, each with its own log group and
// role, and grants each exactly the data access its role needs. Each
// deploys its own role's bootstrap (built from the one main package with
// its role tag) and is told its role by KEEL_ROLE.
func NewFunctions(scope constructs.Construct, id string, props FunctionsProps) *Functions {
	c := constructs.NewConstruct(scope, jsii.String(id))
	out := &Functions{Construct: c}
	for _, s := range functionSpecs() {
		// Each function deploys its own role's bootstrap (BuildApp).
		code := awslambda.Code_FromAsset(jsii.String(RoleDir(props.CodeDir, s.Name)), &awss3assets.AssetOptions{})
		env := map[string]*string{
			EnvRole:   jsii.String(s.Name),
			EnvTable:  props.Table.TableName(),
			EnvBucket: props.Bucket.BucketName(),
		}
		// Every role builds its parts from the same variables, so the
		// extra environment goes to all of them.
		for k, v := range props.Environment {
			env[k] = jsii.String(v)
		}
		if s.Model && props.ModelSecret != nil {
			env[EnvModelSecretArn] = props.ModelSecret.SecretArn()
		}
		logs := awslogs.NewLogGroup(c, jsii.String(s.ID+"Logs"), &awslogs.LogGroupProps{
			Retention: awslogs.RetentionDays_ONE_MONTH,
		})
		var versions *awslambda.VersionOptions
		if s.Name == "step" {
			// Each deploy that changes the step publishes a version, and
			// the deploy after it keeps the old one: runs pinned to it
			// still run there, until the sweeper retires it.
			versions = &awslambda.VersionOptions{RemovalPolicy: awscdk.RemovalPolicy_RETAIN}
		}
		fn := awslambda.NewFunction(c, jsii.String(s.ID), &awslambda.FunctionProps{
			CurrentVersionOptions: versions,
			Description:           jsii.String(s.Description),
			Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:          awslambda.Architecture_ARM_64(),
			Handler:               jsii.String(Bootstrap),
			Code:                  code,
			Timeout:               awscdk.Duration_Seconds(jsii.Number(s.TimeoutSec)),
			MemorySize:            jsii.Number(s.MemoryMiB),
			Environment:           &env,
			LogGroup:              logs,
			LoggingFormat:         awslambda.LoggingFormat_JSON,
			Tracing:               awslambda.Tracing_ACTIVE,
		})
		props.Table.GrantReadWriteData(fn)
		props.Bucket.GrantRead(fn, nil)
		if s.PutArtifacts {
			// Put, not write: artifacts are immutable, nothing deletes them.
			props.Bucket.GrantPut(fn, nil)
		}
		if s.Model && props.ModelSecret != nil {
			props.ModelSecret.GrantRead(fn, nil)
		}
		switch s.Name {
		case "api":
			out.API = fn
		case "step":
			out.Step = fn
		case "approval":
			out.Approval = fn
		case "finalize":
			out.Finalize = fn
		case "schedule":
			out.Schedule = fn
		case "sweep":
			out.Sweep = fn
		}
	}
	return out
}

// ByName returns the functions keyed by their role.
func (f *Functions) ByName() map[string]awslambda.Function {
	return map[string]awslambda.Function{
		"api": f.API, "step": f.Step, "approval": f.Approval, "finalize": f.Finalize, "schedule": f.Schedule,
		"sweep": f.Sweep,
	}
}
