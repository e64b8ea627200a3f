package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestRunStateMachine(t *testing.T) {
	s := synth(t, KeelStackProps{})
	stack := s.Stack.Stack
	sm := s.only(t, "AWS::StepFunctions::StateMachine")
	smID := sm.ID
	p := sm.Props()

	t.Run("standard, traced, logged without execution data", func(t *testing.T) {
		s.Template.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), map[string]any{
			"StateMachineType":     "STANDARD",
			"TracingConfiguration": map[string]any{"Enabled": true},
			"LoggingConfiguration": assertions.Match_ObjectLike(&map[string]any{
				"Level":                "ALL",
				"IncludeExecutionData": false,
			}),
			"StateMachineName": assertions.Match_Absent(),
		})
	})

	// The definition is uploaded as an asset, placeholders and all; the
	// staged copy is what CloudFormation will substitute.
	loc := p["DefinitionS3Location"].(map[string]any)
	staged, err := os.ReadFile(s.stagedAsset(loc["Key"].(string)))
	if err != nil {
		t.Fatalf("staged definition: %v", err)
	}
	real, err := os.ReadFile(realDefinitionFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(staged) != string(real) {
		t.Fatal("the staged definition is not stepfunctions/run.asl.json")
	}
	subs := p["DefinitionSubstitutions"].(map[string]any)

	t.Run("every placeholder is substituted, every substitution used", func(t *testing.T) {
		var keys []string
		for k := range subs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := Substitutions()
		slices.Sort(want)
		if got := DefinitionPlaceholders(staged); !slices.Equal(got, want) {
			t.Errorf("run.asl.json placeholders = %v, want %v", got, want)
		}
		if !slices.Equal(keys, want) {
			t.Errorf("DefinitionSubstitutions keys = %v, want %v", keys, want)
		}
	})

	t.Run("substitutions reference the right resources", func(t *testing.T) {
		fns := s.Stack.Functions
		spill := s.Stack.Spill
		getAttArn := func(id string) string { return jsonOf(map[string]any{"Fn::GetAtt": []any{id, "Arn"}}) }
		want := map[string]string{
			SubstStepFunctionArn:     jsonOf(map[string]any{"Ref": s.only(t, "AWS::Lambda::Alias").ID}),
			SubstApprovalFunctionArn: getAttArn(logicalID(stack, fns.Approval)),
			SubstFinalizeFunctionArn: getAttArn(logicalID(stack, fns.Finalize)),
			SubstClusterArn:          getAttArn(logicalID(stack, spill.Cluster)),
			SubstContainerName:       `"keel"`,
			SubstAssignPublicIP:      `"ENABLED"`, // public subnets, no NAT gateway
		}
		for k, w := range want {
			if got := jsonOf(subs[k]); got != w {
				t.Errorf("%s = %s, want %s", k, got, w)
			}
		}
		td := s.only(t, "AWS::ECS::TaskDefinition")
		if got := jsonOf(subs[SubstTaskDefinitionArn]); got != jsonOf(td.Props()["Family"]) {
			t.Errorf("TaskDefinitionArn = %s, want the family %s", got, jsonOf(td.Props()["Family"]))
		}
		subnets := jsonOf(subs[SubstSubnetIds])
		if !strings.HasPrefix(subnets, `{"Fn::Join":[",",[`) || strings.Count(subnets, `"Ref"`) != 2 || !strings.Contains(subnets, "public") {
			t.Errorf("SubnetIds = %s, want the two public subnets joined by commas", subnets)
		}
		sg := logicalID(stack, spill.SecurityGroup)
		// A one-element Fn::Join is simplified to the element.
		if got := jsonOf(subs[SubstSecurityGroupIds]); got != jsonOf(map[string]any{"Fn::GetAtt": []any{sg, "GroupId"}}) {
			t.Errorf("SecurityGroupIds = %s", got)
		}
	})

	t.Run("substituted as CloudFormation does, the definition is complete", func(t *testing.T) {
		// Replace each ${Name} with a stand-in for its resolved value.
		def := string(staged)
		for k := range subs {
			def = strings.ReplaceAll(def, "${"+k+"}", "resolved-"+k)
		}
		if strings.Contains(def, "${") {
			t.Fatalf("unsubstituted placeholder left: %s", def[strings.Index(def, "${"):][:40])
		}
		var asl struct {
			StartAt string                    `json:"StartAt"`
			States  map[string]map[string]any `json:"States"`
		}
		if err := json.Unmarshal([]byte(def), &asl); err != nil {
			t.Fatalf("substituted definition: %v", err)
		}
		for name, resource := range map[string]string{
			"Step":          "arn:aws:states:::lambda:invoke",
			"AwaitApproval": "arn:aws:states:::lambda:invoke.waitForTaskToken",
			"RunOnFargate":  "arn:aws:states:::ecs:runTask.waitForTaskToken",
			"Rollover":      "arn:aws:states:::states:startExecution",
			"Finalize":      "arn:aws:states:::lambda:invoke",
		} {
			st, ok := asl.States[name]
			if !ok {
				t.Errorf("no state %s", name)
				continue
			}
			if st["Resource"] != resource {
				t.Errorf("%s.Resource = %v, want %s", name, st["Resource"], resource)
			}
		}
		run := jsonOf(asl.States["RunOnFargate"]["Parameters"])
		for _, want := range []string{
			`"Cluster":"resolved-ClusterArn"`,
			`"TaskDefinition":"resolved-TaskDefinitionArn"`,
			`"Name":"resolved-ContainerName"`,
			// The task's run and token come per run through the
			// container overrides; the task definition holds KEEL_ROLE.
			`{"Name":"KEEL_RUN_ID","Value.$":"$.run_id"}`,
			`{"Name":"KEEL_TASK_TOKEN","Value.$":"$$.Task.Token"}`,
			`States.StringSplit('resolved-SubnetIds', ',')`,
		} {
			if !strings.Contains(run, want) {
				t.Errorf("RunOnFargate parameters lack %s: %s", want, run)
			}
		}
	})

	t.Run("the role may do what the states call, and only that", func(t *testing.T) {
		role := logicalID(stack, s.Stack.Run.StateMachine.Role())
		var own []policyStatement
		for _, st := range s.policyStatements() {
			if slices.Contains(s.rolesOf(st.Owner), role) {
				own = append(own, st)
			}
		}
		find := func(action string) []policyStatement {
			var out []policyStatement
			for _, st := range own {
				if slices.Contains(st.Actions(), action) {
					out = append(out, st)
				}
			}
			return out
		}
		invoke := jsonOf(find("lambda:InvokeFunction"))
		for _, fn := range []string{"step", "approval", "finalize"} {
			if id := logicalID(stack, s.Stack.Functions.ByName()[fn]); !strings.Contains(invoke, id) {
				t.Errorf("no invoke on %s: %s", fn, invoke)
			}
		}
		for _, fn := range []string{"api", "schedule"} {
			if id := logicalID(stack, s.Stack.Functions.ByName()[fn]); strings.Contains(invoke, id) {
				t.Errorf("the state machine may invoke %s", fn)
			}
		}
		runTask := find("ecs:RunTask")
		if len(runTask) != 1 {
			t.Fatalf("RunTask statements: %s", jsonOf(runTask))
		}
		rt := jsonOf(runTask[0].Raw)
		if !strings.Contains(rt, ":task-definition/") || !strings.Contains(rt, `:*"`) || !strings.Contains(rt, `"ecs:cluster"`) {
			t.Errorf("RunTask should cover the family's revisions in this cluster: %s", rt)
		}
		pass := jsonOf(find("iam:PassRole"))
		for _, r := range []string{"SpillTaskTaskRole", "SpillTaskExecutionRole"} {
			if !strings.Contains(pass, r) {
				t.Errorf("no PassRole on %s: %s", r, pass)
			}
		}
		start := find("states:StartExecution")
		if len(start) != 1 || jsonOf(start[0].Raw["Resource"]) != jsonOf(map[string]any{"Ref": smID}) {
			t.Errorf("StartExecution (Rollover) should be on this state machine only: %s", jsonOf(start))
		}
		// The Rollover grant lives outside the default policy the state
		// machine depends on, or the stack would have a cycle.
		if len(start) == 1 && strings.Contains(start[0].Owner, "DefaultPolicy") {
			t.Errorf("StartExecution is in %s, which the state machine depends on", start[0].Owner)
		}
		for _, st := range own {
			for _, a := range st.Actions() {
				if strings.HasPrefix(a, "events:") {
					t.Errorf("%s granted: .waitForTaskToken needs no EventBridge rule", a)
				}
			}
		}
	})
}
