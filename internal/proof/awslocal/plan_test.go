package awslocal

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestPlan: what a deployment makes of the fixture template, in order,
// and what it leaves out with the reason.
func TestPlan(t *testing.T) {
	tmpl, err := LoadTemplate("testdata/cdkout")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range Plan(tmpl) {
		got = append(got, r.Logical+" "+string(r.Action))
		if r.Action == NotCreated && r.Why == "" {
			t.Errorf("%s (%s) left out without a reason", r.Logical, r.Type)
		}
	}
	want := []string{
		"StorageTableB43FDCE7 dynamodb:CreateTable",
		"StorageArtifacts08431D1F s3:CreateBucket",
		"FunctionsStepServiceRole1 iam:CreateRole",
		"FunctionsStepE9F5EEDF lambda:CreateFunction",
		"RunStateMachine106B9D3D states:CreateStateMachine",
		"Custom1 not created",
		"FunctionsStepLogs1 not created",
		"SpillVpc1 not created",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plan\n got %q\nwant %q", got, want)
	}
}

// TestPlanKnowsEveryTypeOfTheTemplate: every resource type of the
// synthesized template is either made or left out for a stated reason
// (a new construct in infra/cdk must be decided on here). It reads
// infra/cdk/cdk.out, which make synth (and make aws-local-e2e) writes.
func TestPlanKnowsEveryTypeOfTheTemplate(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "infra", "cdk", "cdk.out")
	if _, err := os.Stat(filepath.Join(dir, "Keel.template.json")); err != nil {
		t.Skipf("SKIPPED: no synthesized template in %s (make synth writes it)", dir)
	}
	tmpl, err := LoadTemplate(dir)
	if err != nil {
		t.Fatal(err)
	}
	made := map[Action]int{}
	for _, r := range Plan(tmpl) {
		made[r.Action]++
		if r.Action == NotCreated && r.Why == "no scenario uses it" {
			t.Errorf("%s: type %s is neither made nor left out for a stated reason (plan.go)", r.Logical, r.Type)
		}
	}
	if made[CreateTable] != 1 || made[CreateBucket] != 1 || made[CreateStateMachine] != 1 || made[CreateFunction] != 6 {
		t.Errorf("plan makes %v: want one table, bucket and state machine and six functions", made)
	}
}

func TestFunctionEnv(t *testing.T) {
	props := map[string]any{"Environment": map[string]any{"Variables": map[string]any{"KEEL_ROLE": "step", "A": "template"}}}
	for _, tc := range []struct {
		name         string
		props        map[string]any
		opts, target map[string]string
		want         map[string]any
		err          bool
	}{
		{"template only", props, nil, nil, map[string]any{"KEEL_ROLE": "step", "A": "template"}, false},
		{"options over template", props, map[string]string{"A": "opts"}, nil, map[string]any{"KEEL_ROLE": "step", "A": "opts"}, false},
		{"target over options", props, map[string]string{"A": "opts"}, map[string]string{"A": "target", "AWS_ENDPOINT_URL_SFN": "http://172.17.0.1:1"},
			map[string]any{"KEEL_ROLE": "step", "A": "target", "AWS_ENDPOINT_URL_SFN": "http://172.17.0.1:1"}, false},
		{"no role", map[string]any{}, map[string]string{"A": "x"}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := functionEnv(tc.props, tc.opts, tc.target)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPhysicalNamesFitAWSLimits: the names a stack gives its resources
// fit AWS's limits (LocalStack validates them; moto does not), for the
// longest stack name the scenarios use, and stay distinct.
func TestPhysicalNamesFitAWSLimits(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "infra", "cdk", "cdk.out")
	tmpl, err := LoadTemplate(dir)
	if err != nil {
		t.Skipf("SKIPPED: no synthesized template in %s (make synth writes it)", dir)
	}
	longest := ""
	for _, sc := range scenarios {
		if n := sc.name + "-" + string(TargetEngine); len(n) > len(longest) {
			longest = n
		}
	}
	p := physicalIDs(tmpl, longest, "ABCDEF12")
	seen := map[string]string{}
	for _, r := range Plan(tmpl) {
		if r.Action == NotCreated {
			continue
		}
		name := p.Refs[r.Logical]
		if len(name) > maxPhysicalName {
			t.Errorf("%s: name %q is %d long", r.Logical, name, len(name))
		}
		if other, ok := seen[name]; ok {
			t.Errorf("%s and %s are both named %s", r.Logical, other, name)
		}
		seen[name] = r.Logical
	}
}
