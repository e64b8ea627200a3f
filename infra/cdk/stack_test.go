package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func TestKeelStack(t *testing.T) {
	s := synth(t, KeelStackProps{})
	stack := s.Stack.Stack

	t.Run("resource counts", func(t *testing.T) {
		countTypes(t, s, map[string]int{
			"AWS::DynamoDB::Table":             1,
			"AWS::S3::Bucket":                  1,
			"AWS::Lambda::Function":            6, // no custom-resource functions
			"AWS::StepFunctions::StateMachine": 1,
			"AWS::ECS::Cluster":                1,
			"AWS::ECS::TaskDefinition":         1,
			"AWS::EC2::VPC":                    1,
			"AWS::EC2::NatGateway":             0, // see TestIdleCost
			"AWS::EC2::EIP":                    0,
			"AWS::ApiGatewayV2::Api":           1,
			"AWS::ApiGatewayV2::Route":         3, // $default; the viewer's GET / and GET /ui/{file}
			"AWS::Scheduler::Schedule":         1,
			"AWS::Logs::LogGroup":              9, // 6 functions, task, state machine, API access
			"AWS::Events::Rule":                1, // the sweep schedule
		})
	})

	t.Run("outputs", func(t *testing.T) {
		for _, name := range []string{"ApiUrl", "TableName", "BucketName", "StateMachineArn", "SchedulerRoleArn", "ScheduleFunctionArn"} {
			s.Template.HasOutput(jsii.String(name), map[string]any{})
		}
		outs := s.JSON["Outputs"].(map[string]any)
		if got := jsonOf(outs["StateMachineArn"].(map[string]any)["Value"]); got != jsonOf(map[string]any{"Ref": logicalID(stack, s.Stack.Run.StateMachine)}) {
			t.Errorf("StateMachineArn output = %s", got)
		}
	})

	t.Run("no context lookups", func(t *testing.T) {
		if s.Missing != 0 {
			t.Errorf("synthesis wants %d context lookups (needs credentials)", s.Missing)
		}
	})

	t.Run("functions know the state machine where they start executions", func(t *testing.T) {
		smRef := jsonOf(map[string]any{"Ref": logicalID(stack, s.Stack.Run.StateMachine)})
		for name, fn := range s.Stack.Functions.ByName() {
			vars := s.resources("AWS::Lambda::Function")[logicalID(stack, fn)].Props()["Environment"].(map[string]any)["Variables"].(map[string]any)
			got, has := vars[EnvStateMachineArn]
			want := name == "api" || name == "schedule" || name == "sweep"
			if has != want || (has && jsonOf(got) != smRef) {
				t.Errorf("%s: %s = %s (set: %v, want set: %v)", name, EnvStateMachineArn, jsonOf(got), has, want)
			}
		}
	})

	t.Run("a rule invokes the sweep function every five minutes", func(t *testing.T) {
		fn := logicalID(stack, s.Stack.Functions.Sweep)
		vars := s.resources("AWS::Lambda::Function")[fn].Props()["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[EnvRole] != "sweep" {
			t.Errorf("sweep function %s = %v", EnvRole, vars[EnvRole])
		}
		s.Template.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
			"ScheduleExpression": "rate(5 minutes)",
			"State":              "ENABLED",
			"Targets": []any{map[string]any{
				"Arn": map[string]any{"Fn::GetAtt": []any{fn, "Arn"}},
			}},
		})
		s.Template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
			"Action":       "lambda:InvokeFunction",
			"FunctionName": map[string]any{"Fn::GetAtt": []any{fn, "Arn"}},
			"Principal":    "events.amazonaws.com",
		})
		var acts []string
		for _, st := range s.policyStatements() {
			if slices.Contains(s.rolesOf(st.Owner), logicalID(stack, s.Stack.Functions.Sweep.Role())) {
				acts = append(acts, st.Actions()...)
			}
		}
		// SendTaskSuccess: a decision whose wake was lost is delivered again.
		for _, want := range []string{"states:StartExecution", "states:DescribeExecution", "states:SendTaskSuccess"} {
			if !slices.Contains(acts, want) {
				t.Errorf("sweep function may not %s (has %v)", want, acts)
			}
		}
	})

	t.Run("the Fargate task may report through its token", func(t *testing.T) {
		role := logicalID(stack, s.Stack.Spill.TaskDefinition.TaskRole())
		var acts []string
		for _, st := range s.policyStatements() {
			if slices.Contains(s.rolesOf(st.Owner), role) {
				acts = append(acts, st.Actions()...)
			}
		}
		for _, a := range []string{"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat", "dynamodb:UpdateItem", "s3:PutObject"} {
			if !slices.Contains(acts, a) {
				t.Errorf("task role lacks %s (has %v)", a, acts)
			}
		}
	})

	t.Run("IAM: no wildcard actions, no managed full-access policies", func(t *testing.T) {
		for _, st := range s.policyStatements() {
			for _, a := range st.Actions() {
				if a == "*" || strings.HasSuffix(a, ":*") {
					t.Errorf("%s allows %s", st.Owner, a)
				}
			}
			if st.Raw["Effect"] == "Allow" && st.Raw["NotAction"] != nil {
				t.Errorf("%s allows NotAction %s", st.Owner, jsonOf(st.Raw["NotAction"]))
			}
		}
		for id, r := range s.resources("AWS::IAM::Role") {
			managed := jsonOf(r.Props()["ManagedPolicyArns"])
			for _, bad := range []string{"FullAccess", "AdministratorAccess", "PowerUser"} {
				if strings.Contains(managed, bad) {
					t.Errorf("role %s has a managed %s policy: %s", id, bad, managed)
				}
			}
		}
		s.Template.ResourceCountIs(jsii.String("AWS::IAM::ManagedPolicy"), jsii.Number(0))
	})

	t.Run("no hard-coded resource names", func(t *testing.T) {
		names := []string{"TableName", "BucketName", "FunctionName", "RoleName", "StateMachineName", "ClusterName", "LogGroupName", "GroupName", "Name"}
		for id, v := range s.JSON["Resources"].(map[string]any) {
			r := v.(map[string]any)
			props, _ := r["Properties"].(map[string]any)
			for _, n := range names {
				got, ok := props[n].(string)
				if !ok {
					continue // absent, or a reference to another resource
				}
				// The HTTP API's Name is a required label, not an
				// identifier: several APIs may share it.
				if r["Type"] == "AWS::ApiGatewayV2::Api" && n == "Name" {
					continue
				}
				// An alias's Name is scoped to its function, which has
				// a generated name.
				if r["Type"] == "AWS::Lambda::Alias" && n == "Name" {
					continue
				}
				t.Errorf("%s (%s) sets %s = %s", id, r["Type"], n, jsonOf(got))
			}
		}
	})

	t.Run("no dependency cycle", func(t *testing.T) {
		if cycle := findCycle(s.JSON); cycle != nil {
			t.Errorf("dependency cycle: %s", strings.Join(cycle, " -> "))
		}
	})
}

func TestKeelStackVariants(t *testing.T) {
	cases := []struct {
		name  string
		props KeelStackProps
		check func(t *testing.T, s synthesized)
	}{
		{
			name: "environment-specific stack with given zones makes no lookups",
			props: KeelStackProps{
				StackProps:        awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String(fakeAccount), Region: jsii.String(fakeRegion)}},
				AvailabilityZones: []string{"eu-west-1a", "eu-west-1b"},
			},
			check: func(t *testing.T, s synthesized) {
				if s.Missing != 0 {
					raw, _ := os.ReadFile(filepath.Join(s.OutDir, "manifest.json"))
					t.Errorf("%d context lookups: %s", s.Missing, raw)
				}
				if subnets := jsonOf(s.resources("AWS::EC2::Subnet")); !strings.Contains(subnets, "eu-west-1b") {
					t.Errorf("subnets not in the given zones: %s", subnets)
				}
			},
		},
		{
			name:  "environment reaches every function and the task, the model secret step and the task only",
			props: KeelStackProps{ModelSecretName: "keel/model", Environment: map[string]string{"KEEL_MODEL": "anthropic"}},
			check: func(t *testing.T, s synthesized) {
				stack := s.Stack.Stack
				for name, fn := range s.Stack.Functions.ByName() {
					vars := jsonOf(s.resources("AWS::Lambda::Function")[logicalID(stack, fn)].Props()["Environment"])
					if !strings.Contains(vars, `"KEEL_MODEL":"anthropic"`) {
						t.Errorf("%s lacks the extra environment: %s", name, vars)
					}
					if got, want := strings.Contains(vars, EnvModelSecretArn), name == "step"; got != want {
						t.Errorf("%s has %s: %v, want %v (%s)", name, EnvModelSecretArn, got, want, vars)
					}
					if strings.Contains(vars, "secretsmanager") && !strings.Contains(vars, ":secret:keel/model") {
						t.Errorf("%s: unexpected secret reference %s", name, vars)
					}
				}
				td := jsonOf(s.only(t, "AWS::ECS::TaskDefinition").Props())
				if !strings.Contains(td, EnvModelSecretArn) || !strings.Contains(td, `"Value":"anthropic"`) {
					t.Errorf("task lacks the model settings: %s", td)
				}
				readers := map[string]bool{}
				for _, st := range s.policyStatements() {
					if slices.Contains(st.Actions(), "secretsmanager:GetSecretValue") {
						if !strings.Contains(jsonOf(st.Raw["Resource"]), ":secret:keel/model-??????") {
							t.Errorf("secret grant on %s", jsonOf(st.Raw["Resource"]))
						}
						for _, r := range s.rolesOf(st.Owner) {
							readers[r] = true
						}
					}
				}
				want := map[string]bool{
					logicalID(stack, s.Stack.Functions.Step.Role()):           true,
					logicalID(stack, s.Stack.Spill.TaskDefinition.TaskRole()): true,
				}
				if fmt.Sprint(readers) != fmt.Sprint(want) {
					t.Errorf("secret readers = %v, want %v", readers, want)
				}
			},
		},
		{
			name:  "the program's own secrets reach every function and the task, and nothing else",
			props: KeelStackProps{AppSecretNames: []string{"keel/mcp-gh"}},
			check: func(t *testing.T, s synthesized) {
				stack := s.Stack.Stack
				readers := map[string]bool{}
				for _, st := range s.policyStatements() {
					if slices.Contains(st.Actions(), "secretsmanager:GetSecretValue") {
						if !strings.Contains(jsonOf(st.Raw["Resource"]), ":secret:keel/mcp-gh-??????") {
							t.Errorf("secret grant on %s", jsonOf(st.Raw["Resource"]))
						}
						for _, r := range s.rolesOf(st.Owner) {
							readers[r] = true
						}
					}
				}
				want := map[string]bool{logicalID(stack, s.Stack.Spill.TaskDefinition.TaskRole()): true}
				for _, fn := range s.Stack.Functions.ByName() {
					want[logicalID(stack, fn.Role())] = true
				}
				if fmt.Sprint(readers) != fmt.Sprint(want) {
					t.Errorf("secret readers = %v, want %v", readers, want)
				}
				if tmpl := jsonOf(s.JSON); strings.Contains(tmpl, "SecretString") {
					t.Error("a secret's value is in the template")
				}
				if cycle := findCycle(s.JSON); cycle != nil {
					t.Errorf("dependency cycle: %s", strings.Join(cycle, " -> "))
				}
			},
		},
		{
			name:  "JWT auth and a pulled task image",
			props: KeelStackProps{JWTIssuer: "https://issuer.example.com/", JWTAudience: []string{"keel"}, TaskImage: "public.ecr.aws/example/keel:1"},
			check: func(t *testing.T, s synthesized) {
				s.Template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{"AuthorizationType": "JWT"})
				if td := jsonOf(s.only(t, "AWS::ECS::TaskDefinition").Props()); !strings.Contains(td, `"Image":"public.ecr.aws/example/keel:1"`) {
					t.Errorf("task image: %s", td)
				}
				if cycle := findCycle(s.JSON); cycle != nil {
					t.Errorf("dependency cycle: %s", strings.Join(cycle, " -> "))
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, synth(t, tc.props))
		})
	}
}

// findCycle returns a dependency cycle among the template's resources (Ref,
// Fn::GetAtt, ${...} in Fn::Sub, DependsOn), or nil. CloudFormation
// rejects a cyclic template only at deploy time.
func findCycle(tmpl map[string]any) []string {
	resources := tmpl["Resources"].(map[string]any)
	deps := map[string][]string{}
	sub := regexp.MustCompile(`\$\{([A-Za-z0-9]+)(\.[A-Za-z0-9.]+)?\}`)
	var walk func(id string, v any)
	walk = func(id string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch k {
				case "Ref":
					if s, ok := e.(string); ok {
						deps[id] = append(deps[id], s)
					}
				case "Fn::GetAtt":
					if l, ok := e.([]any); ok && len(l) > 0 {
						if s, ok := l[0].(string); ok {
							deps[id] = append(deps[id], s)
						}
					}
				case "Fn::Sub":
					str, _ := e.(string)
					if l, ok := e.([]any); ok && len(l) > 0 {
						str, _ = l[0].(string)
					}
					for _, m := range sub.FindAllStringSubmatch(str, -1) {
						deps[id] = append(deps[id], m[1])
					}
				}
				walk(id, e)
			}
		case []any:
			for _, e := range x {
				walk(id, e)
			}
		}
	}
	for id, v := range resources {
		r := v.(map[string]any)
		walk(id, r["Properties"])
		deps[id] = append(deps[id], stringList(r["DependsOn"])...)
	}
	ids := make([]string, 0, len(resources))
	for id := range resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	const (
		unvisited = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		state[id] = onPath
		path = append(path, id)
		for _, d := range deps[id] {
			if _, isResource := resources[d]; !isResource || d == id {
				continue
			}
			switch state[d] {
			case onPath:
				i := slices.Index(path, d)
				return append(slices.Clone(path[i:]), d)
			case unvisited:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return nil
	}
	for _, id := range ids {
		if state[id] == unvisited {
			if c := visit(id); c != nil {
				return c
			}
		}
	}
	return nil
}

func TestFindCycle(t *testing.T) {
	res := func(props map[string]any, dependsOn ...string) map[string]any {
		r := map[string]any{"Type": "AWS::X::Y", "Properties": props}
		if len(dependsOn) > 0 {
			var l []any
			for _, d := range dependsOn {
				l = append(l, d)
			}
			r["DependsOn"] = l
		}
		return r
	}
	cases := []struct {
		name      string
		resources map[string]any
		cyclic    bool
	}{
		{"chain", map[string]any{
			"A": res(map[string]any{"X": map[string]any{"Ref": "B"}}),
			"B": res(map[string]any{"X": map[string]any{"Fn::GetAtt": []any{"C", "Arn"}}}),
			"C": res(nil),
		}, false},
		{"ref and getatt", map[string]any{
			"A": res(map[string]any{"X": map[string]any{"Ref": "B"}}),
			"B": res(map[string]any{"X": map[string]any{"Fn::GetAtt": []any{"A", "Arn"}}}),
		}, true},
		{"through DependsOn", map[string]any{
			"A": res(nil, "B"),
			"B": res(map[string]any{"X": []any{map[string]any{"Ref": "A"}}}),
		}, true},
		{"through Fn::Sub", map[string]any{
			"A": res(map[string]any{"X": map[string]any{"Fn::Sub": "arn:${B.Arn}/x"}}),
			"B": res(map[string]any{"X": map[string]any{"Fn::Sub": []any{"${A}", map[string]any{}}}}),
		}, true},
		{"pseudo parameters are not resources", map[string]any{
			"A": res(map[string]any{"X": map[string]any{"Ref": "AWS::Region"}, "Y": map[string]any{"Fn::Sub": "${AWS::AccountId}"}}),
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := findCycle(map[string]any{"Resources": tc.resources})
			if (got != nil) != tc.cyclic {
				t.Errorf("findCycle = %v, want cyclic %v", got, tc.cyclic)
			}
		})
	}
}
