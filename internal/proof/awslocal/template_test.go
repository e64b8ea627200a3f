package awslocal

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/aws/states"
	"github.com/keelrun/keel/stepfunctions"
)

func TestResolve(t *testing.T) {
	p := &Physical{Region: "us-east-1", Account: "123456789012",
		Refs:  map[string]string{"Table": "Keel-Table-ABC", "SubA": "subnet-a", "SubB": "subnet-b"},
		Attrs: map[string]map[string]string{"Fn": {"Arn": "arn:aws:lambda:us-east-1:123456789012:function:fn"}}}
	for _, tc := range []struct{ name, in, want string }{
		{"ref", `{"Ref":"Table"}`, `"Keel-Table-ABC"`},
		{"pseudo", `{"Ref":"AWS::Region"}`, `"us-east-1"`},
		{"getatt", `{"Fn::GetAtt":["Fn","Arn"]}`, `"arn:aws:lambda:us-east-1:123456789012:function:fn"`},
		{"join", `{"Fn::Join":[",",[{"Ref":"SubA"},{"Ref":"SubB"}]]}`, `"subnet-a,subnet-b"`},
		{"sub", `{"Fn::Sub":"cdk-${AWS::AccountId}-${AWS::Region}-${Table}-${Fn.Arn}"}`,
			`"cdk-123456789012-us-east-1-Keel-Table-ABC-arn:aws:lambda:us-east-1:123456789012:function:fn"`},
		{"sub vars", `{"Fn::Sub":["${X}!",{"X":{"Ref":"Table"}}]}`, `"Keel-Table-ABC!"`},
		{"nested", `{"A":[{"Ref":"Table"},1,true],"B":{"C":{"Ref":"SubA"}}}`, `{"A":["Keel-Table-ABC",1,true],"B":{"C":"subnet-a"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in, want any
			if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tc.want), &want)
			got, err := p.Resolve(in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
	for _, bad := range []string{`{"Ref":"Nope"}`, `{"Fn::GetAtt":["Fn","Nope"]}`, `{"Fn::Sub":"${Nope}"}`} {
		var in any
		_ = json.Unmarshal([]byte(bad), &in)
		if _, err := p.Resolve(in); err == nil {
			t.Errorf("%s resolved without a physical id", bad)
		}
	}
}

func TestLowerLoopBound(t *testing.T) {
	def, err := lowerLoopBound(stepfunctions.Definition, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := states.Load(def, map[string]string{"StepFunctionArn": "s", "ApprovalFunctionArn": "a", "FinalizeFunctionArn": "f",
		"ClusterArn": "c", "TaskDefinitionArn": "t", "SubnetIds": "n", "SecurityGroupIds": "g", "AssignPublicIp": "ENABLED", "ContainerName": "k"})
	if err != nil {
		t.Fatalf("the lowered definition no longer loads: %v", err)
	}
	if m.StartAt != "Init" {
		t.Fatalf("StartAt %q", m.StartAt)
	}
	var v struct {
		States map[string]struct {
			Choices []map[string]any
		}
	}
	_ = json.Unmarshal(def, &v)
	found := false
	for _, c := range v.States["Route"].Choices {
		if c["Variable"] == "$.loop" {
			found = c["NumericGreaterThanEquals"] == float64(2)
		}
	}
	if !found {
		t.Fatalf("the Route choice on $.loop was not lowered to 2")
	}
	if _, err := lowerLoopBound([]byte(`{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}`), 2); err == nil {
		t.Fatal("a definition without the loop bound was accepted")
	}
}
