package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

func TestScheduling(t *testing.T) {
	cases := []struct {
		name       string
		example    ExampleSchedule
		state      string
		expression string
		agent      string
	}{
		{name: "example is disabled by default", state: "DISABLED", expression: "rate(1 day)", agent: "research"},
		{
			name:    "enabled from props",
			example: ExampleSchedule{Expression: "cron(0 6 * * ? *)", Enabled: true, Agent: "digest", Input: "Morning digest."},
			state:   "ENABLED", expression: "cron(0 6 * * ? *)", agent: "digest",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stack awscdk.Stack
			var fn awslambda.Function
			var sched *Scheduling
			s := synthConstruct(t, func(st awscdk.Stack, appDir string) {
				stack = st
				fn = awslambda.NewFunction(st, jsii.String("Schedule"), &awslambda.FunctionProps{
					Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
					Architecture: awslambda.Architecture_ARM_64(),
					Handler:      jsii.String("bootstrap"),
					Code:         awslambda.Code_FromAsset(jsii.String(appDir), nil),
				})
				sched = NewScheduling(st, "Scheduling", SchedulingProps{Function: fn, Example: tc.example})
			})
			fnID := logicalID(stack, fn)
			roleID := logicalID(stack, sched.Role)

			sc := s.only(t, "AWS::Scheduler::Schedule").Props()
			if sc["State"] != tc.state || sc["ScheduleExpression"] != tc.expression {
				t.Errorf("state %v expression %v, want %s %s", sc["State"], sc["ScheduleExpression"], tc.state, tc.expression)
			}
			target := sc["Target"].(map[string]any)
			if jsonOf(target["Arn"]) != jsonOf(map[string]any{"Fn::GetAtt": []any{fnID, "Arn"}}) {
				t.Errorf("target %s, want the schedule function", jsonOf(target["Arn"]))
			}
			if jsonOf(target["RoleArn"]) != jsonOf(map[string]any{"Fn::GetAtt": []any{roleID, "Arn"}}) {
				t.Errorf("role %s, want the scheduler role", jsonOf(target["RoleArn"]))
			}
			var input map[string]string
			if err := json.Unmarshal([]byte(target["Input"].(string)), &input); err != nil {
				t.Fatalf("Input is not a JSON object of strings: %v", err)
			}
			if input["scheduled_time"] != "<aws.scheduler.scheduled-time>" || input["agent"] != tc.agent ||
				input["schedule_arn"] != "<aws.scheduler.schedule-arn>" || input["input"] == "" {
				t.Errorf("Input = %v", input)
			}

			role := s.resources("AWS::IAM::Role")[roleID].Props()
			trust := jsonOf(role["AssumeRolePolicyDocument"])
			if !strings.Contains(trust, `"Service":"scheduler.amazonaws.com"`) || !strings.Contains(trust, `"aws:SourceAccount"`) {
				t.Errorf("scheduler role trust = %s", trust)
			}
			for _, st := range s.policyStatements() {
				if !slices.Contains(s.rolesOf(st.Owner), roleID) {
					continue
				}
				if got := st.Actions(); !slices.Equal(got, []string{"lambda:InvokeFunction"}) || !strings.Contains(jsonOf(st.Raw["Resource"]), fnID) {
					t.Errorf("scheduler role may %v on %s; want only invoke of the schedule function", got, jsonOf(st.Raw["Resource"]))
				}
			}
		})
	}
}
