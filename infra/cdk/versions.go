package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// StepAlias is the alias of the step function that runs start on: it
// points to the version the latest deploy published.
const StepAlias = "live"

// EnvStepFunction is the sweep function's KEEL_STEP_FUNCTION: the live
// alias's ARN, whose function's published versions it retires.
const EnvStepFunction = "KEEL_STEP_FUNCTION"

// publishStep publishes the step function's code as a version (a new one
// at each deploy that changes it, old ones retained) behind the live
// alias, and lets the sweeper list and retire the versions no live run
// uses.
func publishStep(scope constructs.Construct, fns *Functions) awslambda.Alias {
	live := awslambda.NewAlias(scope, jsii.String("StepLive"), &awslambda.AliasProps{
		AliasName:   jsii.String(StepAlias),
		Version:     fns.Step.CurrentVersion(),
		Description: jsii.String("Keel: the step version new runs and upgrade-policy runs run on"),
	})
	fns.Sweep.AddEnvironment(jsii.String(EnvStepFunction), live.FunctionArn(), nil)
	fns.Sweep.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("lambda:ListVersionsByFunction", "lambda:GetAlias", "lambda:DeleteFunction"),
		Resources: jsii.Strings(*fns.Step.FunctionArn(), *fns.Step.FunctionArn()+":*"),
	}))
	return live
}
