package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// ContainerName is the task's container; run.asl.json overrides its
// environment (KEEL_RUN_ID, KEEL_TASK_TOKEN) by this name.
const ContainerName = "keel"

// SpillTaskProps configures NewSpillTask.
type SpillTaskProps struct {
	// ImageDir is the Docker build context: the app's bootstrap and
	// TaskDockerfile (BuildApp writes both). Ignored when Image is set.
	ImageDir string
	// Image, when set, is an image URI to pull instead of building one.
	Image             string
	CPU, MemoryMiB    int
	NATGateways       int
	AvailabilityZones []string // empty: the region's first two
	Table             awsdynamodb.ITable
	Bucket            awss3.IBucket
	ModelSecret       awssecretsmanager.ISecret // may be nil
	Environment       map[string]string
}

// SpillTask is where a run goes when a step needs more than Lambda's 15
// minutes or a sandbox: an arm64 Fargate task started by the state
// machine's RunOnFargate state with a task token.
type SpillTask struct {
	constructs.Construct
	Vpc            awsec2.Vpc
	SecurityGroup  awsec2.SecurityGroup
	Cluster        awsecs.Cluster
	TaskDefinition awsecs.FargateTaskDefinition
	Container      awsecs.ContainerDefinition
	// TaskSubnets are the subnets the task runs in: public without NAT
	// gateways, private with them.
	TaskSubnets awsec2.SubnetType
}

// NewSpillTask creates the network, the cluster and the task definition.
//
// Network: two availability zones and free S3 and DynamoDB gateway
// endpoints in every subnet's route table. The task must reach model
// providers on the internet, so isolated subnets with only VPC endpoints
// would not do. With NATGateways 0 (the default) the VPC has only public
// subnets: the task runs there with a public IPv4 address (RunOnFargate's
// AssignPublicIp ENABLED) behind a security group with no inbound rule,
// and leaves through the internet gateway, which bills nothing by the
// hour. With NATGateways 1 or 2 the task runs in private subnets without a
// public address (AssignPublicIp DISABLED) and leaves through the NAT
// gateways' Elastic IPs: fixed egress addresses, at an hourly price.
func NewSpillTask(scope constructs.Construct, id string, props SpillTaskProps) *SpillTask {
	c := constructs.NewConstruct(scope, jsii.String(id))
	vpc, taskSubnets := newSpillVpc(c, props)

	sg := awsec2.NewSecurityGroup(c, jsii.String("TaskSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Keel Fargate tasks: no inbound, outbound to models and AWS APIs"),
		AllowAllOutbound: jsii.Bool(true),
	})

	cluster := awsecs.NewCluster(c, jsii.String("Cluster"), &awsecs.ClusterProps{Vpc: vpc})

	td := awsecs.NewFargateTaskDefinition(c, jsii.String("Task"), &awsecs.FargateTaskDefinitionProps{
		Cpu:            jsii.Number(float64(props.CPU)),
		MemoryLimitMiB: jsii.Number(float64(props.MemoryMiB)),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
	})

	// The binary runs the long-running task; RunOnFargate adds KEEL_RUN_ID
	// and KEEL_TASK_TOKEN per run through container overrides.
	env := map[string]*string{
		EnvRole:   jsii.String(RoleTask),
		EnvTable:  props.Table.TableName(),
		EnvBucket: props.Bucket.BucketName(),
	}
	for k, v := range props.Environment {
		env[k] = jsii.String(v)
	}
	if props.ModelSecret != nil {
		env[EnvModelSecretArn] = props.ModelSecret.SecretArn()
	}
	logs := awslogs.NewLogGroup(c, jsii.String("TaskLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_MONTH,
	})
	container := td.AddContainer(jsii.String("Container"), &awsecs.ContainerDefinitionOptions{
		ContainerName: jsii.String(ContainerName),
		Image:         taskImage(props),
		Essential:     jsii.Bool(true),
		Environment:   &env,
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{
			LogGroup:     logs,
			StreamPrefix: jsii.String("keel"),
		}),
		// The task checkpoints and reports through its token on SIGTERM;
		// give it the longest grace Fargate allows.
		StopTimeout: awscdk.Duration_Seconds(jsii.Number(120)),
	})

	props.Table.GrantReadWriteData(td.TaskRole())
	props.Bucket.GrantRead(td.TaskRole(), nil)
	props.Bucket.GrantPut(td.TaskRole(), nil)
	if props.ModelSecret != nil {
		props.ModelSecret.GrantRead(td.TaskRole(), nil)
	}

	return &SpillTask{Construct: c, Vpc: vpc, SecurityGroup: sg, Cluster: cluster, TaskDefinition: td, Container: container, TaskSubnets: taskSubnets}
}

// newSpillVpc is NewSpillTask's network, and the subnet type the task
// runs in.
func newSpillVpc(c constructs.Construct, props SpillTaskProps) (awsec2.Vpc, awsec2.SubnetType) {
	subnets := []*awsec2.SubnetConfiguration{
		{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24)},
	}
	taskSubnets := awsec2.SubnetType_PUBLIC
	if props.NATGateways > 0 {
		taskSubnets = awsec2.SubnetType_PRIVATE_WITH_EGRESS
		subnets = append(subnets, &awsec2.SubnetConfiguration{Name: jsii.String("tasks"), SubnetType: taskSubnets, CidrMask: jsii.Number(20)})
	}
	vpcProps := &awsec2.VpcProps{
		NatGateways:         jsii.Number(float64(props.NATGateways)),
		SubnetConfiguration: &subnets,
		GatewayEndpoints: &map[string]*awsec2.GatewayVpcEndpointOptions{
			"S3":       {Service: awsec2.GatewayVpcEndpointAwsService_S3()},
			"DynamoDB": {Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB()},
		},
		// Nothing here uses the default security group; restricting it
		// would add a Node.js custom-resource Lambda to the stack.
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	}
	if len(props.AvailabilityZones) > 0 {
		vpcProps.AvailabilityZones = jsii.Strings(props.AvailabilityZones...)
	} else {
		vpcProps.MaxAzs = jsii.Number(2)
	}
	return awsec2.NewVpc(c, jsii.String("Vpc"), vpcProps), taskSubnets
}

// taskImage is the pulled image, or a Docker build asset: synthesis only
// stages the build context (the prebuilt binary and its Dockerfile) and
// fingerprints it; cdk deploy builds the image for linux/arm64 and pushes
// it to the bootstrap ECR repository. Nothing is compiled in Docker.
func taskImage(props SpillTaskProps) awsecs.ContainerImage {
	if props.Image != "" {
		return awsecs.ContainerImage_FromRegistry(jsii.String(props.Image), nil)
	}
	return awsecs.ContainerImage_FromAsset(jsii.String(props.ImageDir), &awsecs.AssetImageProps{
		File:     jsii.String(TaskDockerfile),
		Platform: awsecrassets.Platform_LINUX_ARM64(),
	})
}

// SubnetIDs is the comma-separated list of the task subnets, for the
// SubnetIds placeholder of run.asl.json.
func (s *SpillTask) SubnetIDs() *string {
	sel := s.Vpc.SelectSubnets(&awsec2.SubnetSelection{SubnetType: s.TaskSubnets})
	return awscdk.Fn_Join(jsii.String(","), sel.SubnetIds)
}

// AssignPublicIP is RunOnFargate's AssignPublicIp, for the AssignPublicIp
// placeholder: ENABLED in public subnets, where the address is the task's
// only way out (billed per hour only while the task runs), DISABLED in
// private subnets, which leave through the NAT gateways.
func (s *SpillTask) AssignPublicIP() *string {
	if s.TaskSubnets == awsec2.SubnetType_PUBLIC {
		return jsii.String("ENABLED")
	}
	return jsii.String("DISABLED")
}

// SecurityGroupIDs is the comma-separated list of the task security
// groups, for the SecurityGroupIds placeholder.
func (s *SpillTask) SecurityGroupIDs() *string {
	return awscdk.Fn_Join(jsii.String(","), &[]*string{s.SecurityGroup.SecurityGroupId()})
}

// grantRun lets grantee start the task definition family's revisions (any
// revision: see NewRunStateMachine) in this cluster only, and pass the task
// and execution roles to ECS.
func (s *SpillTask) grantRun(grantee awsiam.IGrantable, family *string) {
	td := s.TaskDefinition
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee: grantee,
		Actions: jsii.Strings("ecs:RunTask"),
		ResourceArns: jsii.Strings(*awscdk.Stack_Of(td).FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("ecs"),
			Resource:     jsii.String("task-definition"),
			ResourceName: jsii.String(*family + ":*"),
		})),
		Conditions: &map[string]*map[string]any{
			"ArnEquals": {"ecs:cluster": s.Cluster.ClusterArn()},
		},
	})
	td.TaskRole().GrantPassRole(grantee.GrantPrincipal())
	td.ObtainExecutionRole().GrantPassRole(grantee.GrantPrincipal())
}
