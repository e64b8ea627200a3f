package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// SweepInterval is how often the sweep function runs.
const SweepInterval = 5 // minutes

// SweepScheduleProps configures NewSweepSchedule.
type SweepScheduleProps struct {
	// Function is the sweep function (KEEL_ROLE=sweep).
	Function awslambda.IFunction
}

// SweepSchedule is the EventBridge rule that invokes the sweeper.
type SweepSchedule struct {
	constructs.Construct
	Rule awsevents.Rule
}

// NewSweepSchedule creates a rule that invokes the sweep function every
// SweepInterval minutes. A sweep is idempotent, so a late or repeated
// invocation does no harm; the rule retries a failed invocation twice.
func NewSweepSchedule(scope constructs.Construct, id string, props SweepScheduleProps) *SweepSchedule {
	c := constructs.NewConstruct(scope, jsii.String(id))
	rule := awsevents.NewRule(c, jsii.String("Rule"), &awsevents.RuleProps{
		Description: jsii.String("Keel sweeper: compares runs with their executions and repairs wedged ones"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(SweepInterval))),
	})
	rule.AddTarget(awseventstargets.NewLambdaFunction(props.Function, &awseventstargets.LambdaFunctionProps{
		RetryAttempts: jsii.Number(2),
		MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(SweepInterval)),
	}))
	return &SweepSchedule{Construct: c, Rule: rule}
}
