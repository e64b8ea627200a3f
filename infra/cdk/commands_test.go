package main

import (
	"slices"
	"strings"
	"testing"
)

// TestCommandRunnerFacts holds, on the synthesized stack, each fact the
// command runner's isolation rests on (docs/aws-sandbox.md): none of them
// can be shown on the emulators the Go tests run, so the template is where
// they are checked.
func TestCommandRunnerFacts(t *testing.T) {
	s := synth(t, KeelStackProps{CommandRunner: true, S3PrefixListID: "pl-6da54004"})
	ks := s.Stack
	fnID := logicalID(ks.Stack, ks.Commands.Function)
	fn := s.resources("AWS::Lambda::Function")[fnID].Props()

	t.Run("tenant isolation per run", func(t *testing.T) {
		if got := jsonOf(fn["TenancyConfig"]); got != `{"TenantIsolationMode":"PER_TENANT"}` {
			t.Fatalf("TenancyConfig = %s", got)
		}
	})
	t.Run("no environment: no resource name, no credential", func(t *testing.T) {
		if env, ok := fn["Environment"]; ok {
			t.Fatalf("the runner has an environment: %s", jsonOf(env))
		}
	})
	roleID := logicalID(ks.Stack, ks.Commands.Role)
	t.Run("the role holds no data permission", func(t *testing.T) {
		if !strings.Contains(jsonOf(fn["Role"]), roleID) {
			t.Fatalf("the function's role is %s, want %s", jsonOf(fn["Role"]), roleID)
		}
		if m, ok := s.resources("AWS::IAM::Role")[roleID].Props()["ManagedPolicyArns"]; ok {
			t.Fatalf("managed policies on the runner's role: %s", jsonOf(m))
		}
		n := 0
		for _, st := range s.policyStatements() {
			if st.Owner != roleID && !slices.Contains(s.rolesOf(st.Owner), roleID) {
				continue
			}
			for _, a := range st.Actions() {
				n++
				svc, op, _ := strings.Cut(strings.ToLower(a), ":")
				if a == "*" || strings.Contains(op, "*") {
					t.Errorf("wildcard action %q", a)
				}
				if svc != "logs" && svc != "ec2" {
					t.Errorf("action %q: the runner's role may only write its logs and make its VPC interfaces", a)
				}
				if svc == "ec2" && !strings.Contains(op, "networkinterface") && op != "describesubnets" && !strings.HasSuffix(op, "privateipaddresses") {
					t.Errorf("ec2 action %q is not one Lambda needs for a VPC interface", a)
				}
			}
		}
		if n == 0 {
			t.Fatal("no statement found for the runner's role: this test proves nothing")
		}
	})
	vpcID := logicalID(ks.Stack, ks.Commands.Vpc)
	t.Run("isolated subnets: no route but the S3 endpoint", func(t *testing.T) {
		for id, r := range s.resources("AWS::EC2::VPCGatewayAttachment") {
			if strings.Contains(jsonOf(r.Props()["VpcId"]), vpcID) {
				t.Errorf("an internet gateway is attached to the runner's VPC (%s)", id)
			}
		}
		tables := map[string]bool{}
		for id, r := range s.resources("AWS::EC2::RouteTable") {
			if strings.Contains(jsonOf(r.Props()["VpcId"]), vpcID) {
				tables[id] = true
			}
		}
		if len(tables) == 0 {
			t.Fatal("no route table in the runner's VPC")
		}
		for id, r := range s.resources("AWS::EC2::Route") {
			for tb := range tables {
				if strings.Contains(jsonOf(r.Props()["RouteTableId"]), tb) {
					t.Errorf("route %s in the runner's subnets: %s", id, jsonOf(r.Props()))
				}
			}
		}
		var eps []resource
		for _, r := range s.resources("AWS::EC2::VPCEndpoint") {
			if strings.Contains(jsonOf(r.Props()["VpcId"]), vpcID) {
				eps = append(eps, r)
			}
		}
		if len(eps) != 1 {
			t.Fatalf("%d endpoints in the runner's VPC, want the S3 gateway alone", len(eps))
		}
		p := eps[0].Props()
		if typ, _ := p["VpcEndpointType"].(string); typ != "" && typ != "Gateway" {
			t.Errorf("endpoint type %s", typ)
		}
		for tb := range tables {
			if !strings.Contains(jsonOf(p["RouteTableIds"]), tb) {
				t.Errorf("route table %s has no route to the endpoint", tb)
			}
		}
		doc := jsonOf(p["PolicyDocument"])
		bucketID := logicalID(ks.Stack, ks.Storage.Bucket)
		if !strings.Contains(doc, bucketID) || strings.Count(doc, `"Resource"`) != 1 || strings.Contains(doc, `"Resource":"*"`) {
			t.Errorf("endpoint policy is not the run bucket alone: %s", doc)
		}
		for _, a := range []string{"s3:*", "s3:ListBucket", "s3:DeleteObject"} {
			if strings.Contains(doc, `"`+a+`"`) {
				t.Errorf("endpoint policy allows %s: %s", a, doc)
			}
		}
	})
	t.Run("security group: no inbound, HTTPS to S3 only", func(t *testing.T) {
		sgID := logicalID(ks.Stack, ks.Commands.SecurityGroup)
		sg := s.resources("AWS::EC2::SecurityGroup")[sgID].Props()
		if in, ok := sg["SecurityGroupIngress"]; ok {
			t.Errorf("ingress: %s", jsonOf(in))
		}
		for _, r := range s.resources("AWS::EC2::SecurityGroupIngress") {
			if strings.Contains(jsonOf(r.Props()["GroupId"]), sgID) {
				t.Errorf("ingress rule: %s", jsonOf(r.Props()))
			}
		}
		eg, _ := sg["SecurityGroupEgress"].([]any)
		for _, r := range s.resources("AWS::EC2::SecurityGroupEgress") {
			if strings.Contains(jsonOf(r.Props()["GroupId"]), sgID) {
				eg = append(eg, r.Props())
			}
		}
		if len(eg) != 1 {
			t.Fatalf("egress %s, want one rule", jsonOf(eg))
		}
		r := eg[0].(map[string]any)
		if r["IpProtocol"] != "tcp" || r["FromPort"] != 443.0 || r["ToPort"] != 443.0 || r["DestinationPrefixListId"] != "pl-6da54004" {
			t.Errorf("egress %s, want tcp 443 to the S3 prefix list", jsonOf(r))
		}
		vpc, _ := fn["VpcConfig"].(map[string]any)
		if !strings.Contains(jsonOf(vpc["SecurityGroupIds"]), sgID) || !strings.Contains(jsonOf(vpc["SubnetIds"]), "Commands") {
			t.Errorf("the function is not in the runner's subnets behind its group: %s", jsonOf(vpc))
		}
	})
	t.Run("the step function and the task invoke it, nothing else", func(t *testing.T) {
		invokers := map[string]bool{}
		for _, st := range s.policyStatements() {
			if slices.Contains(st.Actions(), "lambda:InvokeFunction") && strings.Contains(jsonOf(st.Raw["Resource"]), fnID) {
				for _, r := range s.rolesOf(st.Owner) {
					invokers[r] = true
				}
			}
		}
		want := []string{logicalID(ks.Stack, ks.Functions.Step.Role()), logicalID(ks.Stack, ks.Spill.TaskDefinition.TaskRole())}
		for _, w := range want {
			if !invokers[w] {
				t.Errorf("%s may not invoke the runner (invokers %v)", w, invokers)
			}
		}
		if len(invokers) != len(want) {
			t.Errorf("invokers %v, want only %v", invokers, want)
		}
		step := s.resources("AWS::Lambda::Function")[logicalID(ks.Stack, ks.Functions.Step)].Props()
		if !strings.Contains(jsonOf(step["Environment"]), EnvCommandRunner) {
			t.Error("the step function is not told the runner's name")
		}
		if _, ok := s.containerEnv(t)[EnvCommandRunner]; !ok {
			t.Error("the task is not told the runner's name")
		}
	})
	t.Run("staged uploads expire", func(t *testing.T) {
		b := s.resources("AWS::S3::Bucket")[logicalID(ks.Stack, ks.Storage.Bucket)].Props()
		if lc := jsonOf(b["LifecycleConfiguration"]); !strings.Contains(lc, `"Prefix":"workspace-staging/"`) || !strings.Contains(lc, `"ExpirationInDays":1`) {
			t.Errorf("lifecycle %s", lc)
		}
	})
}

// TestCommandRunnerOff: without keel:commandRunner the stack is as before.
func TestCommandRunnerOff(t *testing.T) {
	s := synth(t, KeelStackProps{})
	if s.Stack.Commands != nil || strings.Contains(jsonOf(s.JSON), EnvCommandRunner) {
		t.Fatal("a command runner without keel:commandRunner")
	}
}
