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
	} {
		if v < 0 {
			return p, fmt.Errorf("KEEL_PRICES: %s is negative (%g)", name, v)
		}
	}
	return p, nil
}
