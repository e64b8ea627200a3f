package cost

import (
	"encoding/json"
	"fmt"
	"os"
)

// Prices are AWS list prices in USD for one region as of Date, per unit.
// A user who pays other prices (another region, a discount) overrides
// them with a JSON file of the same fields ([Load], KEEL_PRICES).
type Prices struct {
	Date   string `json:"date"`
	Region string `json:"region"`

	// Step Functions Standard: per state transition.
	StateTransition float64 `json:"state_transition"`
	// Lambda (arm64): per request and per GB-second.
	LambdaRequest  float64 `json:"lambda_request"`
	LambdaGBSecond float64 `json:"lambda_gb_second"`
	// DynamoDB on-demand: per write and per read request unit.
	DynamoWRU float64 `json:"dynamodb_wru"`
	DynamoRRU float64 `json:"dynamodb_rru"`
	// S3 Standard: per PUT (or POST, LIST) and per GET request.
	S3Put float64 `json:"s3_put"`
	S3Get float64 `json:"s3_get"`
	// Fargate (Linux/ARM): per vCPU-hour and per GB-hour, billed by the
	// second with a one-minute minimum per task.
	FargateVCPUHour float64 `json:"fargate_vcpu_hour"`
	FargateGBHour   float64 `json:"fargate_gb_hour"`

	// What bills while nothing runs ([IdleCost]), per hour: a NAT
	// gateway; a public IPv4 address (an Elastic IP, attached or not);
	// an interface VPC endpoint in one availability zone; an application
	// or network load balancer, a gateway load balancer, a classic one;
	// DynamoDB provisioned capacity per write and per read capacity unit;
	// Lambda provisioned concurrency (arm64) per GB configured.
	NATGatewayHour          float64 `json:"nat_gateway_hour"`
	PublicIPv4Hour          float64 `json:"public_ipv4_hour"`
	InterfaceEndpointHour   float64 `json:"interface_endpoint_hour"`
	LoadBalancerHour        float64 `json:"load_balancer_hour"`
	GatewayLoadBalancerHour float64 `json:"gateway_load_balancer_hour"`
	ClassicLoadBalancerHour float64 `json:"classic_load_balancer_hour"`
	DynamoWCUHour           float64 `json:"dynamodb_wcu_hour"`
	DynamoRCUHour           float64 `json:"dynamodb_rcu_hour"`
	LambdaProvisionedGBHour float64 `json:"lambda_provisioned_gb_hour"`
	KMSKeyMonth             float64 `json:"kms_key_month"`
	SecretMonth             float64 `json:"secret_month"`
	// Storage at rest, per GB-month: a DynamoDB table (Standard class),
	// its point-in-time recovery, S3 Standard, CloudWatch Logs archive.
	DynamoGBMonth     float64 `json:"dynamodb_gb_month"`
	DynamoPITRGBMonth float64 `json:"dynamodb_pitr_gb_month"`
	S3GBMonth         float64 `json:"s3_gb_month"`
	LogsGBMonth       float64 `json:"logs_gb_month"`
}

// Default is the table in force: us-east-1 list prices, looked up on the
// date it names. Sources (each the provider's pricing page for us-east-1):
//
//   - Step Functions Standard, $0.025 per 1,000 state transitions:
//     https://aws.amazon.com/step-functions/pricing/
//   - Lambda arm64, $0.20 per 1M requests and $0.0000133334 per GB-second
//     (first 7.5 billion GB-seconds a month): https://aws.amazon.com/lambda/pricing/
//   - DynamoDB on-demand, $0.625 per million write request units and
//     $0.125 per million read request units (the November 2024 price):
//     https://aws.amazon.com/dynamodb/pricing/on-demand/
//   - S3 Standard, $0.005 per 1,000 PUT requests and $0.0004 per 1,000
//     GET requests: https://aws.amazon.com/s3/pricing/
//   - Fargate Linux/ARM, $0.03238 per vCPU-hour and $0.00356 per GB-hour:
//     https://aws.amazon.com/fargate/pricing/
//   - NAT gateway $0.045 per hour (and $0.045 per GB processed), public
//     IPv4 address $0.005 per hour: https://aws.amazon.com/vpc/pricing/
//   - interface VPC endpoint $0.01 per hour per availability zone:
//     https://aws.amazon.com/privatelink/pricing/
//   - application and network load balancer $0.0225 per hour, gateway
//     $0.0125, classic $0.025 (capacity units on top):
//     https://aws.amazon.com/elasticloadbalancing/pricing/
//   - DynamoDB provisioned $0.00065 per WCU-hour and $0.00013 per
//     RCU-hour: https://aws.amazon.com/dynamodb/pricing/provisioned/
//   - Lambda provisioned concurrency (arm64) $0.0000033334 per GB-second:
//     https://aws.amazon.com/lambda/pricing/
//   - KMS customer managed key $1 per month: https://aws.amazon.com/kms/pricing/;
//     Secrets Manager secret $0.40 per month:
//     https://aws.amazon.com/secrets-manager/pricing/
//   - storage per GB-month: DynamoDB Standard $0.25 and continuous
//     backups (PITR) $0.20 (https://aws.amazon.com/dynamodb/pricing/on-demand/),
//     S3 Standard $0.023 (first 50 TB), CloudWatch Logs archive $0.03
//     (https://aws.amazon.com/cloudwatch/pricing/)
//
// Free tiers are not subtracted: a run's cost is what it adds to a bill
// that is past them.
func Default() Prices {
	return Prices{
		Date:            "2026-11-01",
		Region:          "us-east-1",
		StateTransition: 0.025 / 1000,
		LambdaRequest:   0.20 / 1e6,
		LambdaGBSecond:  0.0000133334,
		DynamoWRU:       0.625 / 1e6,
		DynamoRRU:       0.125 / 1e6,
		S3Put:           0.005 / 1000,
		S3Get:           0.0004 / 1000,
		FargateVCPUHour: 0.03238,
		FargateGBHour:   0.00356,

		NATGatewayHour:          0.045,
		PublicIPv4Hour:          0.005,
		InterfaceEndpointHour:   0.01,
		LoadBalancerHour:        0.0225,
		GatewayLoadBalancerHour: 0.0125,
		ClassicLoadBalancerHour: 0.025,
		DynamoWCUHour:           0.00065,
		DynamoRCUHour:           0.00013,
		LambdaProvisionedGBHour: 0.0000033334 * 3600,
		KMSKeyMonth:             1,
		SecretMonth:             0.40,

		DynamoGBMonth:     0.25,
		DynamoPITRGBMonth: 0.20,
		S3GBMonth:         0.023,
		LogsGBMonth:       0.03,
	}
}

// Load reads a JSON price table from path over [Default]: the fields the
// file names replace the defaults, the others stay. An empty path is the
// default table. A field that is negative is refused, naming it.
func Load(path string) (Prices, error) {
	p := Default()
	if path == "" {
		return p, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("KEEL_PRICES: %w", err)
	}
	return Parse(b)
}

// Parse is [Load] of the file's bytes.
func Parse(b []byte) (Prices, error) {
	p := Default()
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("KEEL_PRICES: %w", err)
	}
	for name, v := range map[string]float64{
		"state_transition": p.StateTransition, "lambda_request": p.LambdaRequest, "lambda_gb_second": p.LambdaGBSecond,
		"dynamodb_wru": p.DynamoWRU, "dynamodb_rru": p.DynamoRRU, "s3_put": p.S3Put, "s3_get": p.S3Get,
		"fargate_vcpu_hour": p.FargateVCPUHour, "fargate_gb_hour": p.FargateGBHour,
		"nat_gateway_hour": p.NATGatewayHour, "public_ipv4_hour": p.PublicIPv4Hour,
		"interface_endpoint_hour": p.InterfaceEndpointHour, "load_balancer_hour": p.LoadBalancerHour,
		"gateway_load_balancer_hour": p.GatewayLoadBalancerHour, "classic_load_balancer_hour": p.ClassicLoadBalancerHour,
		"dynamodb_wcu_hour": p.DynamoWCUHour, "dynamodb_rcu_hour": p.DynamoRCUHour,
		"lambda_provisioned_gb_hour": p.LambdaProvisionedGBHour, "kms_key_month": p.KMSKeyMonth, "secret_month": p.SecretMonth,
		"dynamodb_gb_month": p.DynamoGBMonth, "dynamodb_pitr_gb_month": p.DynamoPITRGBMonth,
		"s3_gb_month": p.S3GBMonth, "logs_gb_month": p.LogsGBMonth,
	} {
		if v < 0 {
			return p, fmt.Errorf("KEEL_PRICES: %s is negative (%g)", name, v)
		}
	}
	return p, nil
}
