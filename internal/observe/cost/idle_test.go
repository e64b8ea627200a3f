package cost

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func idleOf(t *testing.T, name string) IdleReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "idle", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := IdleCost(b, Default())
	if err != nil {
		t.Fatalf("IdleCost(%s): %v", name, err)
	}
	return r
}

// TestIdleCostHandWorked prices three templates whose totals are worked
// by hand from Default's table (730 hours a month).
func TestIdleCostHandWorked(t *testing.T) {
	cases := []struct {
		name     string
		usdMonth float64
		// lines: "What Resource" of each line, in the report's order.
		lines    []string
		unpriced int
		// want are substrings of the printed report.
		want []string
	}{
		{
			name: "serverless.json", usdMonth: 0,
			want: []string{
				"idle: $0.00/month: nothing in the template bills by the hour (16 resources of 14 types)",
				"storage at rest, per GB-month (nothing while empty): DynamoDB $0.25 (1 table), DynamoDB PITR $0.20 (1 table), S3 Standard $0.023 (1 bucket), CloudWatch Logs $0.03 (2 log groups)",
				"prices: us-east-1 list prices of 2026-11-01, 730 hours a month",
				"public IPv4 address: the public IPv4 hourly price while a task runs, nothing idle",
			},
		},
		{
			// $0.045 + $0.005 an hour: the issue's ~$36.50 a month.
			name: "nat.json", usdMonth: 36.50,
			lines: []string{"Elastic IP (public IPv4) SpillVpcpublicSubnet1EIP", "NAT gateway SpillVpcpublicSubnet1NATGateway"},
			want: []string{
				"idle: $36.50/month: 2 resource(s) bill while nothing runs",
				"$0.045/h  $32.85/month", "$0.005/h  $3.65/month",
				"storage at rest, per GB-month",
			},
		},
		{
			// NAT 0.045 + EIP 0.005 + endpoint 2 zones × 0.01 + ALB and
			// NLB 2 × 0.0225 + classic 0.025 + 10 WCU × 0.00065 + 10 RCU
			// × 0.00013 + 2 GB provisioned × 0.01200024 = 0.17180048 an
			// hour, × 730 = 125.4143504, + the key's $1 a month. Lines
			// come by type, then logical id.
			name: "everything.json", usdMonth: 126.4143504, unpriced: 1,
			lines: []string{
				"DynamoDB provisioned writes ProvisionedTable", "DynamoDB provisioned reads ProvisionedTable",
				"Elastic IP (public IPv4) Eip", "NAT gateway Nat", "interface VPC endpoint SecretsEndpoint",
				"classic load balancer Elb", "load balancer (application) Alb", "load balancer (network) Nlb",
				"KMS key Key", "Lambda provisioned concurrency FnLive", "RDS instance Database",
			},
			want: []string{"idle: at least $126.41/month: 11 resource(s)", "RDS instance", "not priced here", "2 zones", "$0.02/h", "$1.00/month"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := idleOf(t, tc.name)
			if math.Abs(r.USDMonth-tc.usdMonth) > 1e-9 {
				t.Errorf("USDMonth = %.9f, want %.9f", r.USDMonth, tc.usdMonth)
			}
			var got []string
			unpriced := 0
			for _, l := range r.Lines {
				got = append(got, l.What+" "+l.Resource)
				if !l.Priced {
					unpriced++
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.lines, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.lines, "\n"))
			}
			if unpriced != tc.unpriced {
				t.Errorf("%d unpriced lines, want %d", unpriced, tc.unpriced)
			}
			if r.Hourly() != (len(tc.lines) > 0) {
				t.Errorf("Hourly() = %v with %d lines", r.Hourly(), len(tc.lines))
			}
			var b strings.Builder
			if err := r.Print(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestIdleCostRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":         "{",
		"no resources":     `{"Outputs": {}}`,
		"not a template":   `[1, 2]`,
		"resources a list": `{"Resources": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := IdleCost([]byte(in), Default()); err == nil || !strings.Contains(err.Error(), "template") {
				t.Errorf("IdleCost = %v, want an error naming the template", err)
			}
		})
	}
}

// TestIdleCostPrices: a price table of the user's own (KEEL_PRICES)
// prices the idle lines too.
func TestIdleCostPrices(t *testing.T) {
	p, err := Parse([]byte(`{"region": "eu-west-1", "date": "2026-12-01", "nat_gateway_hour": 0.048, "public_ipv4_hour": 0.005}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "idle", "nat.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := IdleCost(b, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := (0.048 + 0.005) * 730; math.Abs(r.USDMonth-want) > 1e-9 || r.Region != "eu-west-1" || r.PriceDate != "2026-12-01" {
		t.Errorf("USDMonth %.6f (want %.6f), region %s, date %s", r.USDMonth, want, r.Region, r.PriceDate)
	}
	if _, err := Parse([]byte(`{"nat_gateway_hour": -1}`)); err == nil || !strings.Contains(err.Error(), "nat_gateway_hour") {
		t.Errorf("negative nat_gateway_hour: %v", err)
	}
}
