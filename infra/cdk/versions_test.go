package main

import (
	"slices"
	"strings"
	"testing"
)

// TestStepVersions: the step is published as a retained version behind
// the live alias; the state machine starts runs on the alias and may
// invoke any version; the sweeper is told the alias and may list the
// versions and delete one, and nothing else.
func TestStepVersions(t *testing.T) {
	s := synth(t, KeelStackProps{})
	stack := s.Stack.Stack
	step := logicalID(stack, s.Stack.Functions.Step)
	stepArn := jsonOf(map[string]any{"Fn::GetAtt": []any{step, "Arn"}})

	v := s.only(t, "AWS::Lambda::Version")
	if jsonOf(v.Props()["FunctionName"]) != jsonOf(map[string]any{"Ref": step}) {
		t.Errorf("the version publishes %s, want the step function", jsonOf(v.Props()["FunctionName"]))
	}
	// CloudFormation deletes a replaced resource unless told to keep it:
	// the next deploy must leave this version for the runs pinned to it.
	if v.Raw["DeletionPolicy"] != "Retain" || v.Raw["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("version policies %v / %v, want Retain", v.Raw["DeletionPolicy"], v.Raw["UpdateReplacePolicy"])
	}
	a := s.only(t, "AWS::Lambda::Alias")
	if a.Props()["Name"] != StepAlias || jsonOf(a.Props()["FunctionVersion"]) != jsonOf(map[string]any{"Fn::GetAtt": []any{v.ID, "Version"}}) {
		t.Errorf("alias %s", jsonOf(a.Props()))
	}

	sweep := s.resources("AWS::Lambda::Function")[logicalID(stack, s.Stack.Functions.Sweep)]
	if got := jsonOf(envOf(sweep)[EnvStepFunction]); got != jsonOf(map[string]any{"Ref": a.ID}) {
		t.Errorf("sweep %s = %s, want the alias", EnvStepFunction, got)
	}
	smRole := logicalID(stack, s.Stack.Run.StateMachine.Role())
	sweepRole := logicalID(stack, s.Stack.Functions.Sweep.Role())
	var smInvokesVersions, sweepRetires bool
	for _, st := range s.policyStatements() {
		res := jsonOf(st.Raw["Resource"])
		roles := s.rolesOf(st.Owner)
		versions := strings.Contains(res, stepArn) && strings.Contains(res, `":*"`)
		if slices.Contains(roles, smRole) && slices.Contains(st.Actions(), "lambda:InvokeFunction") && versions {
			smInvokesVersions = true
		}
		if slices.Contains(st.Actions(), "lambda:DeleteFunction") {
			if !slices.Equal(roles, []string{sweepRole}) || !versions ||
				!slices.Equal(slices.Sorted(slices.Values(st.Actions())), []string{"lambda:DeleteFunction", "lambda:GetAlias", "lambda:ListVersionsByFunction"}) {
				t.Errorf("lambda:DeleteFunction granted by %s to %v on %s", jsonOf(st.Actions()), roles, res)
			}
			sweepRetires = true
		}
	}
	if !smInvokesVersions || !sweepRetires {
		t.Errorf("state machine may invoke the step's versions: %v; the sweeper may retire them: %v", smInvokesVersions, sweepRetires)
	}
}
