package cost

import (
	"strconv"
)

// alwaysOn are resource types that bill by the hour (or the month) while
// nothing runs and that the price table does not price: each is a line
// with Priced false, so the total is a lower bound and says so.
var alwaysOn = map[string]string{
	"AWS::EC2::Instance":                          "EC2 instance",
	"AWS::EC2::VPNConnection":                     "site-to-site VPN connection",
	"AWS::EC2::TransitGatewayAttachment":          "transit gateway attachment",
	"AWS::EC2::TransitGatewayVpcAttachment":       "transit gateway attachment",
	"AWS::EC2::ClientVpnTargetNetworkAssociation": "client VPN association",
	"AWS::RDS::DBInstance":                        "RDS instance",
	"AWS::RDS::DBCluster":                         "RDS cluster",
	"AWS::DocDB::DBInstance":                      "DocumentDB instance",
	"AWS::Neptune::DBInstance":                    "Neptune instance",
	"AWS::ElastiCache::CacheCluster":              "ElastiCache cluster",
	"AWS::ElastiCache::ReplicationGroup":          "ElastiCache replication group",
	"AWS::OpenSearchService::Domain":              "OpenSearch domain",
	"AWS::Elasticsearch::Domain":                  "Elasticsearch domain",
	"AWS::Redshift::Cluster":                      "Redshift cluster",
	"AWS::MSK::Cluster":                           "MSK cluster",
	"AWS::EKS::Cluster":                           "EKS control plane",
	"AWS::Kinesis::Stream":                        "Kinesis stream (billed per shard- or stream-hour)",
	"AWS::SageMaker::Endpoint":                    "SageMaker endpoint",
	"AWS::GlobalAccelerator::Accelerator":         "Global Accelerator",
	"AWS::Route53::HostedZone":                    "Route 53 hosted zone",
}

// idleLines are the lines of one resource: none for what bills only by
// use.
func idleLines(id string, res cfnResource, t cfnTemplate, p Prices) []IdleLine {
	props := res.Properties
	one := func(what string, qty float64, unit string, usdHour float64) []IdleLine {
		return []IdleLine{{Resource: id, Type: res.Type, What: what, Quantity: qty, Unit: unit, USDHour: qty * usdHour, Priced: true}}
	}
	monthly := func(what string, usdMonth float64) []IdleLine {
		return []IdleLine{{Resource: id, Type: res.Type, What: what, Quantity: 1, Unit: "resource", USDHour: usdMonth / HoursPerMonth, Priced: true}}
	}
	switch res.Type {
	case "AWS::EC2::NatGateway":
		return one("NAT gateway", 1, "gateway", p.NATGatewayHour)
	case "AWS::EC2::EIP":
		return one("Elastic IP (public IPv4)", 1, "address", p.PublicIPv4Hour)
	case "AWS::EC2::VPCEndpoint":
		switch props["VpcEndpointType"] {
		case "Interface", "GatewayLoadBalancer":
			// One elastic network interface, billed, per subnet (zone).
			return one("interface VPC endpoint", max(1, float64(listLen(props["SubnetIds"]))), "zone", p.InterfaceEndpointHour)
		}
		return nil // a gateway endpoint (the default type) is free
	case "AWS::ElasticLoadBalancingV2::LoadBalancer":
		if props["Type"] == "gateway" {
			return one("gateway load balancer", 1, "load balancer", p.GatewayLoadBalancerHour)
		}
		return one("load balancer ("+str(props["Type"], "application")+")", 1, "load balancer", p.LoadBalancerHour)
	case "AWS::ElasticLoadBalancing::LoadBalancer":
		return one("classic load balancer", 1, "load balancer", p.ClassicLoadBalancerHour)
	case "AWS::DynamoDB::Table":
		return dynamoProvisioned(id, res, p)
	case "AWS::Lambda::Alias", "AWS::Lambda::Version":
		return lambdaProvisioned(id, res, t, p)
	case "AWS::KMS::Key":
		return monthly("KMS key", p.KMSKeyMonth)
	case "AWS::SecretsManager::Secret":
		return monthly("Secrets Manager secret", p.SecretMonth)
	case "AWS::ECS::Service":
		if n, ok := number(props["DesiredCount"]); ok && n == 0 {
			return nil
		}
		return []IdleLine{{Resource: id, Type: res.Type, What: "ECS service with running tasks", Quantity: 1, Unit: "service"}}
	case "AWS::AutoScaling::AutoScalingGroup":
		if n, ok := number(props["MinSize"]); ok && n == 0 {
			return nil
		}
		return []IdleLine{{Resource: id, Type: res.Type, What: "Auto Scaling group with instances", Quantity: 1, Unit: "group"}}
	}
	if what, ok := alwaysOn[res.Type]; ok {
		return []IdleLine{{Resource: id, Type: res.Type, What: what, Quantity: 1, Unit: "resource"}}
	}
	return nil
}

// dynamoProvisioned prices a table's provisioned capacity (the table's
// and its global secondary indexes'): CloudFormation's default billing
// mode is PROVISIONED.
func dynamoProvisioned(id string, res cfnResource, p Prices) []IdleLine {
	if res.Properties["BillingMode"] == "PAY_PER_REQUEST" {
		return nil
	}
	var rcu, wcu float64
	add := func(v any) {
		pt, _ := v.(map[string]any)
		r, _ := number(pt["ReadCapacityUnits"])
		w, _ := number(pt["WriteCapacityUnits"])
		rcu, wcu = rcu+r, wcu+w
	}
	add(res.Properties["ProvisionedThroughput"])
	gsis, _ := res.Properties["GlobalSecondaryIndexes"].([]any)
	for _, g := range gsis {
		gm, _ := g.(map[string]any)
		add(gm["ProvisionedThroughput"])
	}
	var out []IdleLine
	if wcu > 0 {
		out = append(out, IdleLine{Resource: id, Type: res.Type, What: "DynamoDB provisioned writes", Quantity: wcu, Unit: "WCU", USDHour: wcu * p.DynamoWCUHour, Priced: true})
	}
	if rcu > 0 {
		out = append(out, IdleLine{Resource: id, Type: res.Type, What: "DynamoDB provisioned reads", Quantity: rcu, Unit: "RCU", USDHour: rcu * p.DynamoRCUHour, Priced: true})
	}
	return out
}

// lambdaProvisioned prices provisioned concurrency on an alias or a
// version: executions × the function's memory (its MemorySize when the
// FunctionName is a Ref to a function of the template, else 128 MB, the
// smallest, so the line is a lower bound).
func lambdaProvisioned(id string, res cfnResource, t cfnTemplate, p Prices) []IdleLine {
	pc, _ := res.Properties["ProvisionedConcurrencyConfig"].(map[string]any)
	n, ok := number(pc["ProvisionedConcurrentExecutions"])
	if !ok || n <= 0 {
		return nil
	}
	memMB := 128.0
	if ref, ok := res.Properties["FunctionName"].(map[string]any); ok {
		if fn, ok := t.Resources[str(ref["Ref"], "")]; ok {
			if m, ok := number(fn.Properties["MemorySize"]); ok {
				memMB = m
			}
		}
	}
	gb := n * memMB / 1024
	return []IdleLine{{Resource: id, Type: res.Type, What: "Lambda provisioned concurrency", Quantity: gb, Unit: "GB", USDHour: gb * p.LambdaProvisionedGBHour, Priced: true}}
}

// number reads a JSON number or a numeric string (CloudFormation takes both).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func str(v any, def string) string {
	if s, ok := v.(string); ok {
		return s
	}
	return def
}

// listLen is the length of a literal list, 0 for anything else.
func listLen(v any) int {
	l, _ := v.([]any)
	return len(l)
}
