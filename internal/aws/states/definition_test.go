package states

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runASLPath is stepfunctions/run.asl.json, found from this file.
func runASLPath(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "stepfunctions", "run.asl.json")
}

func runASL(t testing.TB) []byte {
	b, err := os.ReadFile(runASLPath(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runSubs are the local DefinitionSubstitutions.
var runSubs = map[string]string{
	"StepFunctionArn":     "keel-step",
	"ApprovalFunctionArn": "keel-approval",
	"FinalizeFunctionArn": "keel-finalize",
	"ClusterArn":          "local",
	"TaskDefinitionArn":   "keel-fargate",
	"SubnetIds":           "subnet-a,subnet-b",
	"SecurityGroupIds":    "sg-1",
	"AssignPublicIp":      "ENABLED",
	"ContainerName":       "keel",
}

func TestLoadRunASL(t *testing.T) {
	m, err := Load(runASL(t), runSubs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AwaitApproval", "BadDecision", "Count", "Done", "Finalize", "FinalizeFailed", "Init", "MoreChildren", "NextChild",
		"Outcome", "Repoint", "RolledOver", "Rollover", "Route", "RunErrored", "RunFailed", "RunOnFargate", "StartChild", "StartChildren", "Step", "Superseded", "Wait"}
	if got := sortedStateNames(m.States); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("states %v", got)
	}
	if strings.Contains(string(m.Definition), "${") {
		t.Fatal("placeholder left after substitution")
	}
	if m.States["RunOnFargate"].HeartbeatSeconds != 120 || m.States["RunOnFargate"].Resource != ECSRunTaskWithToken {
		t.Fatal("RunOnFargate is not a heartbeating ecs:runTask.waitForTaskToken")
	}
	// Every placeholder needs a substitution.
	_, err = Load(runASL(t), map[string]string{"StepFunctionArn": "x"})
	var le *LoadError
	if !errors.As(err, &le) || !strings.Contains(le.Msg, "no substitution") {
		t.Fatalf("missing substitution: %v", err)
	}
}

func TestLoadRejectsOutsideSubset(t *testing.T) {
	const task = `"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "f", "Payload": {}}`
	tests := []struct {
		name      string
		def       string
		wantState string
		wantField string
	}{
		{name: "Parallel state", def: `{"StartAt": "P", "States": {"P": {"Type": "Parallel", "Branches": [], "End": true}}}`, wantState: "P", wantField: "Type"},
		{name: "Map state", def: `{"StartAt": "M", "States": {"M": {"Type": "Map", "End": true}}}`, wantState: "M", wantField: "Type"},
		{name: "JSONata query language", def: `{"QueryLanguage": "JSONata", "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`, wantField: "QueryLanguage"},
		{name: "state-level JSONata", def: `{"StartAt": "A", "States": {"A": {"Type": "Succeed", "QueryLanguage": "JSONata"}}}`, wantState: "A", wantField: "QueryLanguage"},
		{name: "Assign (variables)", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Assign": {"x": 1}, "End": true}}}`, wantState: "A", wantField: "Assign"},
		{name: "Arguments", def: `{"StartAt": "A", "States": {"A": {` + task + `, "Arguments": {}, "End": true}}}`, wantState: "A", wantField: "Arguments"},
		{name: "Credentials", def: `{"StartAt": "A", "States": {"A": {` + task + `, "Credentials": {}, "End": true}}}`, wantState: "A", wantField: "Credentials"},
		{name: "top-level TimeoutSeconds", def: `{"TimeoutSeconds": 5, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`, wantField: "TimeoutSeconds"},
		{name: "direct Lambda ARN resource", def: `{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:f", "End": true}}}`, wantState: "A", wantField: "Resource"},
		{name: ".sync integration", def: `{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::ecs:runTask.sync", "Parameters": {}, "End": true}}}`, wantState: "A", wantField: "Resource"},
		{name: "unknown lambda parameter", def: `{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "f", "Bogus.$": "$"}, "End": true}}}`, wantState: "A", wantField: "Parameters"},
		{name: "waitForTaskToken without the token", def: `{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken", "Parameters": {"FunctionName": "f", "Payload": {}}, "End": true}}}`, wantState: "A", wantField: "Parameters"},
		{name: "heartbeat on a synchronous task", def: `{"StartAt": "A", "States": {"A": {` + task + `, "HeartbeatSeconds": 5, "End": true}}}`, wantState: "A", wantField: "HeartbeatSeconds"},
		{name: "unsupported intrinsic", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Parameters": {"u.$": "States.UUID()"}, "End": true}}}`, wantState: "A", wantField: "Parameters"},
		{name: "bad path", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "InputPath": "$.a[?(@.x)]", "End": true}}}`, wantState: "A", wantField: "InputPath"},
		{name: "ResultPath is not a reference path", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "ResultPath": "$.a[*]", "End": true}}}`, wantState: "A", wantField: "ResultPath"},
		{name: "choice rule with JSONata Condition", def: `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Condition": "{% true %}", "Next": "C"}]}}}`, wantState: "C", wantField: "Choices[0]"},
		{name: "choice rule with an unknown operator", def: `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringContains": "a", "Next": "C"}]}}}`, wantState: "C", wantField: "Choices[0]"},
		{name: "Next names no state", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}}}`, wantState: "A", wantField: "Next"},
		{name: "catcher Next names no state", def: `{"StartAt": "A", "States": {"A": {` + task + `, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Nope"}], "End": true}}}`, wantState: "A", wantField: "Catch[0].Next"},
		{name: "BackoffRate below 1", def: `{"StartAt": "A", "States": {"A": {` + task + `, "Retry": [{"ErrorEquals": ["E"], "BackoffRate": 0.5}], "End": true}}}`, wantState: "A", wantField: "Retry[0].BackoffRate"},
		{name: "unknown JitterStrategy", def: `{"StartAt": "A", "States": {"A": {` + task + `, "Retry": [{"ErrorEquals": ["E"], "JitterStrategy": "HALF"}], "End": true}}}`, wantState: "A", wantField: "Retry[0].JitterStrategy"},
		{name: "States.ALL not alone", def: `{"StartAt": "A", "States": {"A": {` + task + `, "Retry": [{"ErrorEquals": ["States.ALL", "E"]}], "End": true}}}`, wantState: "A", wantField: "Retry[0].ErrorEquals"},
		{name: "States.ALL not last", def: `{"StartAt": "A", "States": {"A": {` + task + `, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "A"}, {"ErrorEquals": ["E"], "Next": "A"}], "End": true}}}`, wantState: "A", wantField: "Catch[0].ErrorEquals"},
		{name: "Wait with two durations", def: `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 1, "SecondsPath": "$.s", "End": true}}}`, wantState: "W", wantField: "Seconds"},
		{name: "Next and End", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "A", "End": true}}}`, wantState: "A", wantField: "End"},
		{name: "ResultSelector on a Pass state", def: `{"StartAt": "A", "States": {"A": {"Type": "Pass", "ResultSelector": {}, "End": true}}}`, wantState: "A", wantField: "ResultSelector"},
		{name: "StartAt names no state", def: `{"StartAt": "Z", "States": {"A": {"Type": "Succeed"}}}`, wantField: "StartAt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.def), nil)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("want a *LoadError, got %v", err)
			}
			if le.State != tc.wantState || le.Field != tc.wantField {
				t.Fatalf("error names state %q field %q, want %q %q (%v)", le.State, le.Field, tc.wantState, tc.wantField, err)
			}
			if tc.wantState != "" && !strings.Contains(err.Error(), `"`+tc.wantState+`"`) {
				t.Fatalf("message does not name the state: %v", err)
			}
		})
	}
}
