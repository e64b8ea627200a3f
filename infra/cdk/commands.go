package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The command runner: its code's directory under AppDir, the package it
// is built from (Keel's own, not the app: it runs no agent code), and the
// variable that names it to the workers.
const (
	RoleCommands       = "cmdrunner"
	CommandRunnerPkg   = "github.com/keelrun/keel/cmd/keel-cmdrunner"
	EnvCommandRunner   = "KEEL_COMMAND_RUNNER"
	commandRunnerMiB   = 2048
	commandRunnerTmpMB = 4096 // the tree, its restore copy and the command's output files
)

// CommandRunnerProps configures NewCommandRunner.
type CommandRunnerProps struct {
	// CodeDir holds the runner's bootstrap (BuildCommandRunner).
	CodeDir string
	// Bucket is the run bucket: the only one its endpoint lets through.
	Bucket awss3.IBucket
	// AvailabilityZones as the stack's (empty: the region's first two).
	AvailabilityZones []string
	// S3PrefixListID, when set (pl-..., the region's com.amazonaws.REGION.s3
	// list), narrows the security group's egress from 443 anywhere to 443
	// to S3. The subnets' routes bound it either way: their only route out
	// is the S3 endpoint's. Synthesis cannot look it up without credentials.
	S3PrefixListID string
}

// CommandRunner is the Lambda function agents' commands run in on AWS
// (internal/aws/cmdrunner, docs/aws-sandbox.md): tenant isolation per run,
// a role that holds no data permission, and a network of its own whose
// only way out is an S3 gateway endpoint that lets through the run bucket
// alone.
type CommandRunner struct {
	constructs.Construct
	Vpc           awsec2.Vpc
	Endpoint      awsec2.GatewayVpcEndpoint
	SecurityGroup awsec2.SecurityGroup
	Role          awsiam.Role
	Function      awslambda.Function
}

// NewCommandRunner creates the runner's network, role and function.
func NewCommandRunner(scope constructs.Construct, id string, props CommandRunnerProps) *CommandRunner {
	c := constructs.NewConstruct(scope, jsii.String(id))
	out := &CommandRunner{Construct: c}
	// Isolated subnets: no internet gateway, no NAT; nothing in them
	// bills by the hour.
	vpcProps := &awsec2.VpcProps{
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{
			{Name: jsii.String("commands"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(24)},
		},
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	}
	if len(props.AvailabilityZones) > 0 {
		vpcProps.AvailabilityZones = jsii.Strings(props.AvailabilityZones...)
	} else {
		vpcProps.MaxAzs = jsii.Number(2)
	}
	out.Vpc = awsec2.NewVpc(c, jsii.String("Vpc"), vpcProps)
	out.Endpoint = out.Vpc.AddGatewayEndpoint(jsii.String("S3"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_S3(),
	})
	// Through the endpoint: reads and writes of the run bucket's objects
	// only (presigned GETs, the staging POST), by whoever signed them.
	out.Endpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("s3:GetObject", "s3:PutObject"),
		Resources:  jsii.Strings(*props.Bucket.ArnForObjects(jsii.String("*"))),
	}))
	out.SecurityGroup = awsec2.NewSecurityGroup(c, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              out.Vpc,
		Description:      jsii.String("Keel command runner: no inbound; outbound HTTPS to S3 only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	peer := awsec2.Peer_AnyIpv4()
	if props.S3PrefixListID != "" {
		peer = awsec2.Peer_PrefixList(jsii.String(props.S3PrefixListID))
	}
	out.SecurityGroup.AddEgressRule(peer, awsec2.Port_Tcp(jsii.Number(443)), jsii.String("S3 through the gateway endpoint (the subnets' only route out)"), jsii.Bool(false))

	logs := awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{Retention: awslogs.RetentionDays_ONE_MONTH})
	out.Role = newCommandRunnerRole(c, logs)
	out.Function = awslambda.NewFunction(c, jsii.String("Function"), &awslambda.FunctionProps{
		Description:          jsii.String("Keel command runner: one agent command in a run's workspace, holding nothing"),
		Runtime:              awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:         awslambda.Architecture_ARM_64(),
		Handler:              jsii.String(Bootstrap),
		Code:                 awslambda.Code_FromAsset(jsii.String(props.CodeDir), &awss3assets.AssetOptions{}),
		Timeout:              awscdk.Duration_Seconds(jsii.Number(900)),
		MemorySize:           jsii.Number(commandRunnerMiB),
		EphemeralStorageSize: awscdk.Size_Mebibytes(jsii.Number(commandRunnerTmpMB)),
		Role:                 out.Role,
		LogGroup:             logs,
		LoggingFormat:        awslambda.LoggingFormat_JSON,
		TenancyConfig:        awslambda.TenancyConfig_PER_TENANT(),
		Vpc:                  out.Vpc,
		VpcSubnets:           &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED},
		SecurityGroups:       &[]awsec2.ISecurityGroup{out.SecurityGroup},
	})
	return out
}

// newCommandRunnerRole is the runner's execution role: its log group, and
// the network interfaces Lambda makes in the VPC for it. No data service:
// the credentials a command could read from the runner's /proc reach
// nothing but a log stream, over a network with no route to CloudWatch.
func newCommandRunnerRole(c constructs.Construct, logs awslogs.LogGroup) awsiam.Role {
	role := awsiam.NewRole(c, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Keel command runner: logs and VPC interfaces only, no data permission"),
	})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logs.LogGroupArn(), *logs.LogGroupArn()+":*"),
	}))
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		// Lambda's documented minimum for a function in a VPC; these
		// actions do not support resource-level scoping.
		Actions: jsii.Strings("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
			"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"),
		Resources: jsii.Strings("*"),
	}))
	return role
}

// Serve lets workers run commands there: the function's name in their
// environment and lambda:InvokeFunction on it.
func (r *CommandRunner) Serve(fns []awslambda.Function, task *SpillTask) {
	for _, fn := range fns {
		fn.AddEnvironment(jsii.String(EnvCommandRunner), r.Function.FunctionName(), nil)
		r.Function.GrantInvoke(fn)
	}
	if task != nil {
		task.Container.AddEnvironment(jsii.String(EnvCommandRunner), r.Function.FunctionName())
		r.Function.GrantInvoke(task.TaskDefinition.TaskRole())
	}
}

// BuildCommandRunner compiles the runner (CommandRunnerPkg, from the app's
// module, which requires Keel) for linux/arm64 into RoleDir(AppDir,
// RoleCommands)/bootstrap.
func BuildCommandRunner(ctx context.Context, p KeelStackProps) error {
	app, err := p.ResolveApp()
	if err != nil {
		return err
	}
	dir := RoleDir(p.AppDir(), RoleCommands)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", filepath.Join(dir, Bootstrap), CommandRunnerPkg}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = app.Module
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("command runner: go %s (in %s) failed: %w\n%s", strings.Join(args, " "), app.Module, err, strings.TrimSpace(string(out)))
	}
	return nil
}
