package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/observe/cost"
)

// idleTemplate is one of internal/observe/cost's templates: serverless.json is
// Keel's default shape (nothing billed by the hour), nat.json the same
// behind one NAT gateway.
func idleTemplate(name string) string {
	return filepath.Join("..", "observe", "cost", "testdata", "idle", name)
}

// TestIdleCost runs `keel doctor --template` and `keel cost --template`
// on synthesized-template shapes, without an API (a stack not yet
// deployed) and with one (the ten answers follow the idle cost).
func TestIdleCost(t *testing.T) {
	answers := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/deployment" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(api.DeploymentReport{Gaps: 1, Text: "1. Which store owns run events and checkpoints?\n"})
	}))
	defer answers.Close()
	noAPI := map[string]string{}
	withAPI := map[string]string{"KEEL_URL": answers.URL, "KEEL_TOKEN": "t"}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want []string
		not  []string
	}{
		{name: "doctor, default template, no API", env: noAPI,
			args: []string{"doctor", "--template", idleTemplate("serverless.json")},
			want: []string{"Idle cost of " + idleTemplate("serverless.json"), "idle: $0.00/month", "storage at rest, per GB-month", "DynamoDB PITR $0.20 (1 table)", "no Keel API configured"},
			not:  []string{"NAT gateway  "}},
		{name: "doctor, one NAT gateway, no API", env: noAPI,
			args: []string{"doctor", "--template", idleTemplate("nat.json")},
			want: []string{"idle: $36.50/month", "NAT gateway", "$0.045/h  $32.85/month", "Elastic IP", "$3.65/month", "storage at rest"}},
		{name: "doctor, template and API: idle cost, then the answers", env: withAPI,
			args: []string{"doctor", "--template", idleTemplate("serverless.json")},
			want: []string{"idle: $0.00/month", "1. Which store owns run events"}, not: []string{"no Keel API"}},
		{name: "doctor --strict counts the answers' gaps, not the idle cost", env: withAPI, code: 1,
			args: []string{"doctor", "--strict", "--template", idleTemplate("serverless.json")}},
		{name: "doctor without template or API still needs the API", env: noAPI, code: 2,
			args: []string{"doctor"}},
		{name: "doctor --prices without --template", env: withAPI, code: 2,
			args: []string{"doctor", "--prices", "p.json"}},
		{name: "doctor, template missing", env: noAPI, code: 2,
			args: []string{"doctor", "--template", filepath.Join(t.TempDir(), "nope.json")}},
		{name: "cost, one NAT gateway", env: noAPI,
			args: []string{"cost", "--template", idleTemplate("nat.json")},
			want: []string{"idle: $36.50/month", "NAT gateway", "prices: us-east-1 list prices of"}},
		{name: "cost, template and a run", env: noAPI, code: 2,
			args: []string{"cost", "--template", idleTemplate("nat.json"), "run_1"}},
		{name: "cost, not a template", env: noAPI, code: 2,
			args: []string{"cost", "--template", "idle.go"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errout := runAs(t, "keel", t.TempDir(), tc.env, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errout)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("stdout has %q:\n%s", n, out)
				}
			}
		})
	}

	t.Run("cost --json", func(t *testing.T) {
		code, out, errout := runAs(t, "keel", t.TempDir(), noAPI, "cost", "--json", "--template", idleTemplate("nat.json"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errout)
		}
		var r cost.IdleReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.USDMonth < 36.4999 || r.USDMonth > 36.5001 || len(r.Lines) != 2 || r.Types["AWS::EC2::NatGateway"] != 1 {
			t.Errorf("idle report %+v", r)
		}
	})
	t.Run("doctor --json", func(t *testing.T) {
		code, out, errout := runAs(t, "keel", t.TempDir(), withAPI, "doctor", "--json", "--template", idleTemplate("serverless.json"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errout)
		}
		var v struct {
			Template   string
			Idle       cost.IdleReport
			Deployment *api.DeploymentReport
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if v.Template != idleTemplate("serverless.json") || v.Idle.Hourly() || len(v.Idle.Storage) != 4 || v.Deployment == nil || v.Deployment.Gaps != 1 {
			t.Errorf("doctor --json = %s", out)
		}
	})
}
