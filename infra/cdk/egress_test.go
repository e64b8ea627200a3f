package main

import (
	"slices"
	"testing"
)

// refOf returns the logical id of a {"Ref": ID}, "" for anything else.
func refOf(v any) string {
	m, _ := v.(map[string]any)
	id, _ := m["Ref"].(string)
	return id
}

// taskSubnets are the logical ids of the subnets RunOnFargate starts the
// task in: the Refs of the SubnetIds substitution's Fn::Join.
func taskSubnets(t *testing.T, s synthesized) []string {
	t.Helper()
	subs, _ := s.only(t, "AWS::StepFunctions::StateMachine").Props()["DefinitionSubstitutions"].(map[string]any)
	join, _ := subs[SubstSubnetIds].(map[string]any)["Fn::Join"].([]any)
	if len(join) != 2 {
		t.Fatalf("SubnetIds = %s, want an Fn::Join", jsonOf(subs[SubstSubnetIds]))
	}
	var out []string
	for _, e := range join[1].([]any) {
		if id := refOf(e); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// checkEgress asserts that the task reaches an HTTPS endpoint on the
// internet from the subnets it runs in, by the synthesized routes: each
// task subnet's route table sends 0.0.0.0/0 to a resource of type
// egressType (the internet gateway, attached to the VPC, or a NAT
// gateway) and holds the S3 and DynamoDB gateway endpoints' routes;
// RunOnFargate's AssignPublicIp is publicIP (a task in a public subnet
// needs its own address to use the internet gateway); the task's security
// group lets every outbound connection (so TCP 443) out and none in.
func checkEgress(t *testing.T, s synthesized, egressType, publicIP string) {
	t.Helper()
	subs, _ := s.only(t, "AWS::StepFunctions::StateMachine").Props()["DefinitionSubstitutions"].(map[string]any)
	if got := subs[SubstAssignPublicIP]; got != publicIP {
		t.Errorf("AssignPublicIp = %v, want %s", got, publicIP)
	}
	all, _ := s.JSON["Resources"].(map[string]any)
	typeOf := func(id string) string {
		r, _ := all[id].(map[string]any)
		typ, _ := r["Type"].(string)
		return typ
	}
	subnets := taskSubnets(t, s)
	if len(subnets) != 2 {
		t.Fatalf("task subnets %v, want one in each of two zones", subnets)
	}
	endpointTables := map[string][]string{}
	for id, r := range s.resources("AWS::EC2::VPCEndpoint") {
		for _, rt := range r.Props()["RouteTableIds"].([]any) {
			endpointTables[id] = append(endpointTables[id], refOf(rt))
		}
	}
	if len(endpointTables) != 2 {
		t.Errorf("%d gateway endpoints, want S3 and DynamoDB", len(endpointTables))
	}
	for _, subnet := range subnets {
		var table string
		for _, a := range s.resources("AWS::EC2::SubnetRouteTableAssociation") {
			if refOf(a.Props()["SubnetId"]) == subnet {
				table = refOf(a.Props()["RouteTableId"])
			}
		}
		if table == "" {
			t.Errorf("task subnet %s has no route table", subnet)
			continue
		}
		var target string
		for _, r := range s.resources("AWS::EC2::Route") {
			p := r.Props()
			if refOf(p["RouteTableId"]) == table && p["DestinationCidrBlock"] == "0.0.0.0/0" {
				target = refOf(p["GatewayId"]) + refOf(p["NatGatewayId"])
			}
		}
		if got := typeOf(target); got != egressType {
			t.Errorf("task subnet %s: default route to %q (%s), want a %s", subnet, target, got, egressType)
		}
		for ep, tables := range endpointTables {
			if !slices.Contains(tables, table) {
				t.Errorf("gateway endpoint %s has no route in the task subnet %s's table", ep, subnet)
			}
		}
	}
	if egressType == "AWS::EC2::InternetGateway" {
		att := s.only(t, "AWS::EC2::VPCGatewayAttachment").Props()
		if typeOf(refOf(att["InternetGatewayId"])) != egressType || typeOf(refOf(att["VpcId"])) != "AWS::EC2::VPC" {
			t.Errorf("internet gateway not attached to the VPC: %s", jsonOf(att))
		}
	}
	sg := s.only(t, "AWS::EC2::SecurityGroup").Props()
	if _, ok := sg["SecurityGroupIngress"]; ok {
		t.Errorf("task security group accepts inbound traffic: %s", jsonOf(sg))
	}
	allOut := false
	for _, e := range sg["SecurityGroupEgress"].([]any) {
		rule := e.(map[string]any)
		allOut = allOut || (rule["CidrIp"] == "0.0.0.0/0" && rule["IpProtocol"] == "-1")
	}
	if !allOut {
		t.Errorf("task security group does not let HTTPS out: %s", jsonOf(sg["SecurityGroupEgress"]))
	}
}
