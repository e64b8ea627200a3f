package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestSpillTask(t *testing.T) {
	cases := []struct {
		name  string
		props SpillTaskProps
		// image: "asset" for the Docker build asset, else the URI.
		image string
		nats  int
		azs   []string
	}{
		{name: "defaults: built image, no NAT, zones from CloudFormation", image: "asset"},
		{
			name:  "pulled image, two NATs, given zones",
			props: SpillTaskProps{Image: "public.ecr.aws/example/keel-task:1", NATGateways: 2, AvailabilityZones: []string{"eu-west-1a", "eu-west-1b"}},
			image: "public.ecr.aws/example/keel-task:1", nats: 2, azs: []string{"eu-west-1a", "eu-west-1b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := synthConstruct(t, func(stack awscdk.Stack, appDir string) {
				storage := NewStorage(stack, "Storage")
				p := tc.props
				p.ImageDir = RoleDir(appDir, RoleTask)
				p.CPU, p.MemoryMiB = 1024, 2048
				p.Table, p.Bucket = storage.Table, storage.Bucket
				p.Environment = map[string]string{"KEEL_MODEL": "scripted"}
				NewSpillTask(stack, "Spill", p)
			})

			subnets := 2 // public in each of two zones
			if tc.nats > 0 {
				subnets = 4 // and private
			}
			countTypes(t, s, map[string]int{
				"AWS::EC2::VPC":         1,
				"AWS::EC2::Subnet":      subnets,
				"AWS::EC2::NatGateway":  tc.nats,
				"AWS::EC2::EIP":         tc.nats,
				"AWS::EC2::VPCEndpoint": 2,
				"AWS::ECS::Cluster":     1,
			})
			endpoints := jsonOf(s.resources("AWS::EC2::VPCEndpoint"))
			for _, svc := range []string{".s3", ".dynamodb"} {
				if !strings.Contains(endpoints, svc) || !strings.Contains(endpoints, `"VpcEndpointType":"Gateway"`) {
					t.Errorf("no gateway endpoint for %s: %s", svc, endpoints)
				}
			}
			subnetJSON := jsonOf(s.resources("AWS::EC2::Subnet"))
			if len(tc.azs) == 0 && !strings.Contains(subnetJSON, "Fn::GetAZs") {
				t.Errorf("subnets do not take their zones from Fn::GetAZs: %s", subnetJSON)
			}
			for _, az := range tc.azs {
				if !strings.Contains(subnetJSON, `"AvailabilityZone":"`+az+`"`) {
					t.Errorf("no subnet in %s", az)
				}
			}

			sg := s.only(t, "AWS::EC2::SecurityGroup").Props()
			if _, ok := sg["SecurityGroupIngress"]; ok {
				t.Errorf("task security group accepts inbound traffic: %s", jsonOf(sg))
			}

			s.Template.HasResourceProperties(jsii.String("AWS::ECS::TaskDefinition"), map[string]any{
				"RequiresCompatibilities": []any{"FARGATE"},
				"NetworkMode":             "awsvpc",
				"Cpu":                     "1024",
				"Memory":                  "2048",
				"RuntimePlatform":         map[string]any{"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"},
				"ContainerDefinitions": []any{assertions.Match_ObjectLike(&map[string]any{
					"Name":      ContainerName,
					"Essential": true,
					"Environment": assertions.Match_ArrayWith(&[]any{
						map[string]any{"Name": "KEEL_MODEL", "Value": "scripted"},
						map[string]any{"Name": EnvRole, "Value": RoleTask},
					}),
					"LogConfiguration": assertions.Match_ObjectLike(&map[string]any{"LogDriver": "awslogs"}),
				})},
			})
			td := s.only(t, "AWS::ECS::TaskDefinition").Props()
			image := td["ContainerDefinitions"].([]any)[0].(map[string]any)["Image"]
			if tc.image != "asset" {
				if image != tc.image {
					t.Errorf("image = %s, want %s", jsonOf(image), tc.image)
				}
				return
			}
			if !strings.Contains(jsonOf(image), "cdk-hnb659fds-container-assets") {
				t.Errorf("image is not the Docker asset: %s", jsonOf(image))
			}
			// The asset manifest tells cdk deploy how to build the image:
			// from the app directory (the prebuilt binary and the
			// Dockerfile), for arm64.
			imgs := s.dockerImages(t)
			if len(imgs) != 1 {
				t.Fatalf("%d docker images in the asset manifest, want 1", len(imgs))
			}
			for _, src := range imgs {
				if src.DockerFile != TaskDockerfile || src.Platform != "linux/arm64" {
					t.Errorf("image source = %+v", src)
				}
				staged := filepath.Join(s.OutDir, src.Directory)
				for name, want := range map[string]string{TaskDockerfile: string(taskDockerfile), Bootstrap: placeholderBootstrap(RoleTask)} {
					got, err := os.ReadFile(filepath.Join(staged, name))
					if err != nil {
						t.Errorf("staged build context: %v", err)
					} else if string(got) != want {
						t.Errorf("staged %s = %q, want %q", name, got, want)
					}
				}
				entries, err := os.ReadDir(staged)
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) != 2 {
					t.Errorf("build context holds %d entries, want only %s and %s", len(entries), Bootstrap, TaskDockerfile)
				}
			}
		})
	}
}
