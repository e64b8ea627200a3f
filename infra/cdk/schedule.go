package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// ExampleSchedule is the example schedule the stack creates. It is
// disabled unless Enabled: deploying Keel starts no agent by itself.
type ExampleSchedule struct {
	// Expression is an EventBridge Scheduler expression: rate(...),
	// cron(...) or at(...), in UTC. Default "rate(1 day)".
	Expression string
	Enabled    bool
	// Agent and Input are the run the schedule creates.
	// Defaults: "research" and a short example request.
	Agent string
	Input string
}

const (
	defaultScheduleExpression = "rate(1 day)"
	defaultScheduleAgent      = "research"
	defaultScheduleInput      = "Summarise what changed in the watched sources since the last scheduled run."
)

func (e ExampleSchedule) withDefaults() ExampleSchedule {
	if e.Expression == "" {
		e.Expression = defaultScheduleExpression
	}
	if e.Agent == "" {
		e.Agent = defaultScheduleAgent
	}
	if e.Input == "" {
		e.Input = defaultScheduleInput
	}
	return e
}

// SchedulingProps configures NewScheduling.
type SchedulingProps struct {
	Function awslambda.IFunction
	Example  ExampleSchedule
}

// Scheduling lets EventBridge Scheduler create runs: the role schedules
// assume to invoke the schedule function, and the example schedule.
type Scheduling struct {
	constructs.Construct
	Role    awsiam.Role
	Example awsscheduler.Schedule
}

// scheduleInput is the event the schedule function receives
// (handlers.ScheduleEvent). Scheduler delivers at least once;
// scheduled_time is the same on every delivery of one occurrence, so the
// function keys the run on schedule ARN + scheduled time and a redelivery
// finds the run it already created. The owner is the function's
// KEEL_SCHEDULE_OWNER.
func scheduleInput(e ExampleSchedule) map[string]any {
	return map[string]any{
		"agent":          e.Agent,
		"input":          e.Input,
		"scheduled_time": *awsscheduler.ContextAttribute_ScheduledTime(),
		"schedule_arn":   *awsscheduler.ContextAttribute_ScheduleArn(),
	}
}

// NewScheduling creates the scheduler role and the example schedule. The
// role trusts scheduler.amazonaws.com only on behalf of this account, and
// may only invoke the schedule function; further schedules (made with the
// CLI or SDK) reuse it.
func NewScheduling(scope constructs.Construct, id string, props SchedulingProps) *Scheduling {
	c := constructs.NewConstruct(scope, jsii.String(id))
	ex := props.Example.withDefaults()

	role := awsiam.NewRole(c, jsii.String("SchedulerRole"), &awsiam.RoleProps{
		Description: jsii.String("EventBridge Scheduler invokes the Keel schedule function"),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{
				"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
			},
		}),
	})
	props.Function.GrantInvoke(role)

	target := awsschedulertargets.NewLambdaInvoke(props.Function, &awsschedulertargets.ScheduleTargetBaseProps{
		Role:          role,
		Input:         awsscheduler.ScheduleTargetInput_FromObject(scheduleInput(ex)),
		RetryAttempts: jsii.Number(3),
		MaxEventAge:   awscdk.Duration_Hours(jsii.Number(1)),
	})
	example := awsscheduler.NewSchedule(c, jsii.String("Example"), &awsscheduler.ScheduleProps{
		Description: jsii.String("Keel example schedule: creates one run per occurrence"),
		Schedule:    awsscheduler.ScheduleExpression_Expression(jsii.String(ex.Expression), nil),
		Target:      target,
		Enabled:     jsii.Bool(ex.Enabled),
	})
	return &Scheduling{Construct: c, Role: role, Example: example}
}
