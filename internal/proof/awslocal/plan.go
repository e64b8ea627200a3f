package awslocal

import (
	"fmt"
	"sort"
)

// Action is what a deployment does with one resource of the template.
type Action string

const (
	CreateTable        Action = "dynamodb:CreateTable"
	CreateBucket       Action = "s3:CreateBucket"
	CreateRole         Action = "iam:CreateRole"
	CreateFunction     Action = "lambda:CreateFunction"
	PublishVersion     Action = "lambda:PublishVersion"
	CreateAlias        Action = "lambda:CreateAlias"
	CreateStateMachine Action = "states:CreateStateMachine"
	// NotCreated: the resource's Ref resolves to a CloudFormation-shaped
	// physical id, and Why says why nothing is made.
	NotCreated Action = "not created"
)

// PlannedResource is one line of a deployment plan.
type PlannedResource struct {
	Logical, Type string
	Action        Action
	Why           string // for NotCreated
}

// notCreated says, by resource type, why a deployment leaves a resource
// of the template out; a type in neither this table nor planAction is
// left out as "no scenario uses it".
var notCreated = map[string]string{
	"AWS::IAM::Policy":                      "IAM is not enforced by moto or LocalStack (community); the roles exist so Lambda can assume them",
	"AWS::Logs::LogGroup":                   "the functions' logs go to the sandbox log files or the Lambda containers' output",
	"AWS::ApiGatewayV2::Api":                "the HTTP API is played: its payload-2.0 event is built as API Gateway builds it and invoked on the api function",
	"AWS::ApiGatewayV2::Stage":              "the HTTP API is played (see AWS::ApiGatewayV2::Api)",
	"AWS::ApiGatewayV2::Integration":        "the HTTP API is played (see AWS::ApiGatewayV2::Api)",
	"AWS::ApiGatewayV2::Route":              "the HTTP API is played (see AWS::ApiGatewayV2::Api)",
	"AWS::Lambda::Permission":               "the HTTP API and Scheduler are played: nothing but the tests invokes the functions",
	"AWS::Scheduler::Schedule":              "Scheduler's delivery is played: the target input is invoked on the schedule function as Scheduler fills it",
	"AWS::ECS::Cluster":                     "the Fargate spill is not exercised: ecs:runTask.waitForTaskToken is in neither moto's engine nor LocalStack community",
	"AWS::ECS::TaskDefinition":              "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::VPC":                         "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::Subnet":                      "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::SecurityGroup":               "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::RouteTable":                  "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::SubnetRouteTableAssociation": "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::Route":                       "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::EIP":                         "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::InternetGateway":             "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::NatGateway":                  "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::VPCEndpoint":                 "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::EC2::VPCGatewayAttachment":        "the Fargate spill is not exercised (see AWS::ECS::Cluster)",
	"AWS::S3::BucketPolicy":                 "bucket policies are not enforced by moto or LocalStack (community)",
	"AWS::Events::Rule":                     "the sweeper's schedule is not played: no scenario leaves a run without its execution",
	"AWS::CDK::Metadata":                    "CDK's own bookkeeping",
}

var planAction = map[string]Action{
	"AWS::DynamoDB::Table":             CreateTable,
	"AWS::S3::Bucket":                  CreateBucket,
	"AWS::IAM::Role":                   CreateRole,
	"AWS::Lambda::Function":            CreateFunction,
	"AWS::Lambda::Version":             PublishVersion,
	"AWS::Lambda::Alias":               CreateAlias,
	"AWS::StepFunctions::StateMachine": CreateStateMachine,
}

// Plan is what Deploy does with each resource of the template, in the
// order it does it (table, bucket, roles, functions, their versions and
// aliases, state machine; by
// logical id within a type), then the resources it leaves out.
func Plan(t *Template) []PlannedResource {
	order := []Action{CreateTable, CreateBucket, CreateRole, CreateFunction, PublishVersion, CreateAlias, CreateStateMachine}
	rank := map[Action]int{}
	for i, a := range order {
		rank[a] = i
	}
	var made, left []PlannedResource
	for id, r := range t.Resources {
		if a, ok := planAction[r.Type]; ok {
			made = append(made, PlannedResource{Logical: id, Type: r.Type, Action: a})
			continue
		}
		why, ok := notCreated[r.Type]
		if !ok {
			why = "no scenario uses it"
		}
		left = append(left, PlannedResource{Logical: id, Type: r.Type, Action: NotCreated, Why: why})
	}
	sort.Slice(made, func(i, j int) bool {
		if made[i].Action != made[j].Action {
			return rank[made[i].Action] < rank[made[j].Action]
		}
		return made[i].Logical < made[j].Logical
	})
	sort.Slice(left, func(i, j int) bool { return left[i].Logical < left[j].Logical })
	return append(made, left...)
}

// Architecture is a function's Lambda architecture as the template
// declares it (Lambda's default, x86_64, when it declares none).
func (t *Template) Architecture(logical string) string {
	if a, ok := t.Resources[logical].Properties["Architectures"].([]any); ok && len(a) == 1 {
		if s, ok := a[0].(string); ok {
			return s
		}
	}
	return "x86_64"
}

// Role is a function's KEEL_ROLE as the template sets it ("" when none).
func (t *Template) Role(logical string) string {
	env, _ := t.Resources[logical].Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	role, _ := vars["KEEL_ROLE"].(string)
	return role
}

// functionEnv is a function's configured environment: the template's
// variables, then the deployment's options, then what the target adds.
// A function without KEEL_ROLE is an error: the one binary would not know
// which role to play.
func functionEnv(props map[string]any, opts map[string]string, target map[string]string) (map[string]any, error) {
	envProps, _ := props["Environment"].(map[string]any)
	vars, _ := envProps["Variables"].(map[string]any)
	env := map[string]any{}
	for k, v := range vars {
		env[k] = v
	}
	for k, v := range opts {
		env[k] = v
	}
	for k, v := range target {
		env[k] = v
	}
	if role, _ := env["KEEL_ROLE"].(string); role == "" {
		return nil, fmt.Errorf("no KEEL_ROLE in its environment")
	}
	return env, nil
}

// createFunctionRequest is the Lambda CreateFunction request of a
// function: the template's resolved properties, the environment, the
// package and the architecture it was built for (which may differ from
// the template's when the target's machine is of another architecture).
func createFunctionRequest(name string, props, env, code map[string]any, arch string) map[string]any {
	return map[string]any{
		"FunctionName": name, "Runtime": props["Runtime"], "Handler": props["Handler"], "Role": props["Role"],
		"Description": props["Description"], "Timeout": props["Timeout"], "MemorySize": props["MemorySize"],
		"Architectures": []string{arch}, "Environment": map[string]any{"Variables": env},
		"Code": code,
	}
}
