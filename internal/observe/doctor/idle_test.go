package doctor_test

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/observe/cost"
	"github.com/keelrun/keel/internal/observe/doctor"
)

func TestRenderIdle(t *testing.T) {
	cases := []struct {
		name, template string
		want           []string
	}{
		{"nothing hourly", `{"Resources": {"Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"BillingMode": "PAY_PER_REQUEST"}}}}`,
			[]string{"   idle: $0.00/month", "   storage at rest, per GB-month (nothing while empty): DynamoDB $0.25 (1 table)"}},
		{"a NAT gateway", `{"Resources": {"Nat": {"Type": "AWS::EC2::NatGateway"}, "Ip": {"Type": "AWS::EC2::EIP"}}}`,
			[]string{"   idle: $36.50/month", "     NAT gateway", "$32.85/month", "$3.65/month"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := cost.IdleCost([]byte(tc.template), cost.Default())
			if err != nil {
				t.Fatal(err)
			}
			out := doctor.RenderIdle("cdk.out/Keel.template.json", r)
			if !strings.HasPrefix(out, "Idle cost of cdk.out/Keel.template.json") {
				t.Errorf("heading: %q", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n")[1:] {
				if !strings.HasPrefix(line, "   ") {
					t.Errorf("line not indented under the heading: %q", line)
				}
			}
		})
	}
}
