package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// RunStateMachineProps configures NewRunStateMachine.
type RunStateMachineProps struct {
	// DefinitionFile is stepfunctions/run.asl.json.
	DefinitionFile           string
	Step, Approval, Finalize awslambda.IFunction
	// StepLive is the step function's live alias: a run's first Step
	// invokes it, and a pinned run's later Steps the version its step
	// names. The grant on Step covers every qualifier.
	StepLive awslambda.IFunction
	Spill    *SpillTask
}

// RunStateMachine is the one Standard state machine a run executes: one
// execution per run generation (Rollover starts the next).
type RunStateMachine struct {
	constructs.Construct
	StateMachine awsstepfunctions.StateMachine
	LogGroup     awslogs.LogGroup
}

// The placeholders of run.asl.json, each ${Name} in the file. CloudFormation
// replaces them at deploy time (DefinitionSubstitutions); the definition
// itself is uploaded unchanged as an asset.
const (
	SubstStepFunctionArn     = "StepFunctionArn"
	SubstApprovalFunctionArn = "ApprovalFunctionArn"
	SubstFinalizeFunctionArn = "FinalizeFunctionArn"
	SubstClusterArn          = "ClusterArn"
	SubstTaskDefinitionArn   = "TaskDefinitionArn"
	SubstSubnetIds           = "SubnetIds"
	SubstSecurityGroupIds    = "SecurityGroupIds"
	SubstAssignPublicIP      = "AssignPublicIp"
	SubstContainerName       = "ContainerName"
)

// NewRunStateMachine creates the state machine from the definition file and
// grants it what its states call: invoke on the three functions, RunTask
// (with PassRole) on the task definition family, and StartExecution on
// itself for Rollover. The .waitForTaskToken ECS pattern needs no
// EventBridge rule permissions (only .sync does): the task reports through
// its token.
//
// TaskDefinitionArn is substituted with the task definition's family, which
// RunTask resolves to its latest revision: an execution started before a
// deploy (an approval can wait for days) still spills onto the current
// task, just as its Lambda invocations reach the current code through
// unqualified function ARNs. A pinned revision would be deregistered by the
// deploy and could no longer run. (The step function is the exception:
// its versions are retained, see publishStep, and a pinned run's Steps
// invoke its own.)
func NewRunStateMachine(scope constructs.Construct, id string, props RunStateMachineProps) *RunStateMachine {
	c := constructs.NewConstruct(scope, jsii.String(id))
	spill := props.Spill

	logs := awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_MONTH,
	})
	sm := awsstepfunctions.NewStateMachine(c, jsii.String("StateMachine"), &awsstepfunctions.StateMachineProps{
		Comment:          jsii.String("Keel run: stepfunctions/run.asl.json"),
		StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:   awsstepfunctions.DefinitionBody_FromFile(jsii.String(props.DefinitionFile), nil),
		DefinitionSubstitutions: &map[string]*string{
			SubstStepFunctionArn:     props.StepLive.FunctionArn(),
			SubstApprovalFunctionArn: props.Approval.FunctionArn(),
			SubstFinalizeFunctionArn: props.Finalize.FunctionArn(),
			SubstClusterArn:          spill.Cluster.ClusterArn(),
			SubstTaskDefinitionArn:   spill.TaskDefinition.Family(),
			SubstSubnetIds:           spill.SubnetIDs(),
			SubstSecurityGroupIds:    spill.SecurityGroupIDs(),
			SubstAssignPublicIP:      spill.AssignPublicIP(),
			SubstContainerName:       jsii.String(ContainerName),
		},
		TracingEnabled: jsii.Bool(true),
		Logs: &awsstepfunctions.LogOptions{
			Destination: logs,
			Level:       awsstepfunctions.LogLevel_ALL,
			// Execution data holds task tokens (AwaitApproval's and
			// RunOnFargate's payloads): whoever holds one can complete the
			// wait, so it stays out of the logs.
			IncludeExecutionData: jsii.Bool(false),
		},
	})

	for _, fn := range []awslambda.IFunction{props.Step, props.Approval, props.Finalize} {
		fn.GrantInvoke(sm)
	}
	spill.grantRun(sm, spill.TaskDefinition.Family())

	// Rollover starts the next generation on this same state machine. A
	// grant on the role's default policy would make the state machine
	// (which depends on that policy) depend on its own ARN, a cycle; a
	// separate policy attached after it is created has no such edge.
	awsiam.NewPolicy(c, jsii.String("RolloverPolicy"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{sm.Role()},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:StartExecution"),
			Resources: jsii.Strings(*sm.StateMachineArn()),
		})},
	})

	return &RunStateMachine{Construct: c, StateMachine: sm, LogGroup: logs}
}
