package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/keelrun/keel/internal/observe/cost"
	"github.com/keelrun/keel/internal/observe/doctor"
)

// byUse are the resource types of the default stack: each free, or billed
// only by use (requests, compute seconds, stored bytes). A type that is
// not here fails TestIdleCost until someone decides what it costs idle
// and adds it (or makes it optional).
var byUse = []string{
	"AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Authorizer", "AWS::ApiGatewayV2::Integration",
	"AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Stage",
	"AWS::DynamoDB::Table", // on demand: TestIdleCost checks BillingMode
	"AWS::EC2::InternetGateway", "AWS::EC2::Route", "AWS::EC2::RouteTable", "AWS::EC2::SecurityGroup",
	"AWS::EC2::Subnet", "AWS::EC2::SubnetRouteTableAssociation", "AWS::EC2::VPC",
	"AWS::EC2::VPCEndpoint", // gateway endpoints: TestIdleCost checks the type
	"AWS::EC2::VPCGatewayAttachment",
	"AWS::ECS::Cluster", "AWS::ECS::TaskDefinition", "AWS::Events::Rule",
	"AWS::IAM::Policy", "AWS::IAM::Role", "AWS::Lambda::Function", "AWS::Lambda::Permission", "AWS::Lambda::Version", "AWS::Lambda::Alias",
	"AWS::Logs::LogGroup", "AWS::S3::Bucket", "AWS::S3::BucketPolicy", "AWS::Scheduler::Schedule",
	"AWS::StepFunctions::StateMachine",
}

// idleOf prices the synthesized template while nothing runs.
func idleOf(t *testing.T, s synthesized) cost.IdleReport {
	t.Helper()
	raw, err := json.Marshal(s.JSON)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cost.IdleCost(raw, cost.Default())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hourlyBilled lists, as "TYPE ID", the resources that bill by the hour
// (or month) whether or not anything runs: internal/observe/cost's idle lines and,
// checked here on the template itself, the kinds issue #33 names (NAT
// gateway, Elastic IP, interface VPC endpoint, load balancer, provisioned
// DynamoDB capacity, Lambda provisioned concurrency).
func hourlyBilled(t *testing.T, s synthesized) []string {
	t.Helper()
	var out []string
	add := func(typ, id string) {
		if l := typ + " " + id; !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	for _, l := range idleOf(t, s).Lines {
		add(l.Type, l.Resource)
	}
	all, _ := s.JSON["Resources"].(map[string]any)
	for id, v := range all {
		r := resource{ID: id, Raw: v.(map[string]any)}
		r.Type, _ = r.Raw["Type"].(string)
		p := r.Props()
		switch r.Type {
		case "AWS::EC2::NatGateway", "AWS::EC2::EIP", "AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::ElasticLoadBalancing::LoadBalancer":
			add(r.Type, id)
		case "AWS::EC2::VPCEndpoint":
			if typ, _ := p["VpcEndpointType"].(string); typ != "" && typ != "Gateway" {
				add(r.Type, id)
			}
		case "AWS::DynamoDB::Table":
			if p["BillingMode"] != "PAY_PER_REQUEST" {
				add(r.Type, id)
			}
		case "AWS::Lambda::Alias", "AWS::Lambda::Version":
			if _, ok := p["ProvisionedConcurrencyConfig"]; ok {
				add(r.Type, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestIdleCost: the default stack bills nothing by the hour, and the
// check that says so catches a NAT gateway the moment one is the
// default; doctor prints each idle cost from the real template.
func TestIdleCost(t *testing.T) {
	cases := []struct {
		name  string
		props KeelStackProps
		// hourly: the types the check must flag (each once).
		hourly []string
		// doctor: substrings of doctor's idle section.
		doctor []string
		// egress: the type of the task subnets' default route target;
		// publicIP: RunOnFargate's AssignPublicIp.
		egress, publicIP string
	}{
		{name: "default: nothing billed by the hour", props: KeelStackProps{},
			doctor: []string{"idle: $0.00/month: nothing in the template bills by the hour",
				"storage at rest, per GB-month (nothing while empty): DynamoDB $0.25 (1 table), DynamoDB PITR $0.20 (1 table), S3 Standard $0.023 (1 bucket), CloudWatch Logs $0.03 (9 log groups)"},
			egress: "AWS::EC2::InternetGateway", publicIP: "ENABLED"},
		{name: "commandRunner: its VPC, endpoint and function bill nothing idle", props: KeelStackProps{CommandRunner: true},
			doctor: []string{"idle: $0.00/month: nothing in the template bills by the hour"}},
		{name: "natGateways=1: the check flags the NAT and its address", props: KeelStackProps{NATGateways: 1},
			hourly: []string{"AWS::EC2::EIP", "AWS::EC2::NatGateway"},
			doctor: []string{"idle: $36.50/month: 2 resource(s) bill while nothing runs",
				"NAT gateway", "$0.045/h  $32.85/month", "Elastic IP (public IPv4)", "$0.005/h  $3.65/month", "storage at rest"},
			egress: "AWS::EC2::NatGateway", publicIP: "DISABLED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := synth(t, tc.props)
			types := map[string]int{}
			for _, v := range s.JSON["Resources"].(map[string]any) {
				types[v.(map[string]any)["Type"].(string)]++
			}
			names := make([]string, 0, len(types))
			for typ, n := range types {
				names = append(names, fmt.Sprintf("%s ×%d", typ, n))
				if !slices.Contains(byUse, typ) && !slices.Contains(tc.hourly, typ) {
					t.Errorf("%s: a resource type this test has not classified: does it bill while idle?", typ)
				}
			}
			slices.Sort(names)
			t.Logf("%d resource types:\n%s", len(names), strings.Join(names, "\n"))

			var gotTypes []string
			for _, l := range hourlyBilled(t, s) {
				gotTypes = append(gotTypes, strings.Fields(l)[0])
			}
			if !slices.Equal(gotTypes, tc.hourly) {
				t.Errorf("billed by the hour: %v, want types %v", hourlyBilled(t, s), tc.hourly)
			}

			out := doctor.RenderIdle("cdk.out/Keel.template.json", idleOf(t, s))
			for _, w := range tc.doctor {
				if !strings.Contains(out, w) {
					t.Errorf("doctor lacks %q:\n%s", w, out)
				}
			}
			if tc.egress != "" { // "": the task's network is checked by the other cases
				checkEgress(t, s, tc.egress, tc.publicIP)
			}
		})
	}
}

// TestHourlyBilledCheck: the check flags each kind of hourly resource as
// CDK synthesizes it, not only a NAT gateway.
func TestHourlyBilledCheck(t *testing.T) {
	s := synthConstruct(t, func(stack awscdk.Stack, _ string) {
		vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{
			NatGateways: jsii.Number(0), MaxAzs: jsii.Number(2), RestrictDefaultSecurityGroup: jsii.Bool(false),
			SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC}},
		})
		vpc.AddInterfaceEndpoint(jsii.String("Secrets"), &awsec2.InterfaceVpcEndpointOptions{
			Service: awsec2.InterfaceVpcEndpointAwsService_SECRETS_MANAGER(),
		})
		awselasticloadbalancingv2.NewApplicationLoadBalancer(stack, jsii.String("Alb"), &awselasticloadbalancingv2.ApplicationLoadBalancerProps{Vpc: vpc})
		awsdynamodb.NewTable(stack, jsii.String("Provisioned"), &awsdynamodb.TableProps{
			PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
			BillingMode:  awsdynamodb.BillingMode_PROVISIONED,
		})
	})
	got := hourlyBilled(t, s)
	var types []string
	for _, l := range got {
		types = append(types, strings.Fields(l)[0])
	}
	want := []string{"AWS::DynamoDB::Table", "AWS::EC2::VPCEndpoint", "AWS::ElasticLoadBalancingV2::LoadBalancer"}
	if !slices.Equal(types, want) {
		t.Errorf("flagged %v, want one each of %v", got, want)
	}
	// cost prices each of them (none is a lower bound).
	for _, l := range idleOf(t, s).Lines {
		if !l.Priced || l.USDMonth <= 0 {
			t.Errorf("%s %s is not priced: %+v", l.Type, l.Resource, l)
		}
	}
}
