package main

import (
	"slices"
	"strings"
	"testing"
)

// roleBase are the tags of a deployed role bootstrap (infra/cdk).
const roleBase = "lambda.norpc,keel_lambda,grpcnotrace"

// TestRoleBuildsLeaveOut checks what each role's bootstrap does not link,
// against the build without a role tag that links it all (so each check
// can fail): no command line (the client, keel init's text/template, the
// viewer), no model SDK where the role calls no model, no Step Functions
// client where the role answers only through its return value, and —
// with grpcnotrace — no golang.org/x/net/trace, whose handlers reach
// html/template and with it reflect's MethodByName, which makes the
// linker keep every exported method of every client (all of S3's).
func TestRoleBuildsLeaveOut(t *testing.T) {
	sdks := []string{"github.com/anthropics/anthropic-sdk-go/v2", "github.com/openai/openai-go/v3", "github.com/aws/aws-sdk-go-v2/service/bedrockruntime"}
	cli := []string{"text/template", k + "internal/client", k + "internal/viewer"}
	all := deps(t, roleBase)
	for _, p := range append(slices.Clone(sdks), cli...) {
		if !slices.Contains(all, p) {
			t.Errorf("the build without a role tag lacks %s: the checks below prove nothing", p)
		}
	}
	if got := deps(t, "lambda.norpc,keel_lambda"); !slices.Contains(got, "golang.org/x/net/trace") {
		t.Errorf("without grpcnotrace golang.org/x/net/trace is not linked: the check below proves nothing")
	}
	for _, tc := range []struct {
		role   string
		models bool // links the model SDKs
	}{
		{role: "api"},
		{role: "step", models: true},
		{role: "approval"},
		{role: "finalize"},
		{role: "schedule"},
		{role: "sweep"},
		{role: "task", models: true},
	} {
		t.Run(tc.role, func(t *testing.T) {
			got := deps(t, roleBase+",keel_role_"+tc.role)
			for _, p := range append(slices.Clone(cli), "golang.org/x/net/trace", "modernc.org/sqlite", k+"internal/devserver") {
				if slices.Contains(got, p) {
					t.Errorf("keel_role_%s links %s", tc.role, p)
				}
			}
			for _, p := range sdks {
				if slices.Contains(got, p) != tc.models {
					t.Errorf("keel_role_%s: links %s = %v, want %v", tc.role, p, !tc.models, tc.models)
				}
			}
			// Every role keeps its records and the Lambda runtime client.
			for _, p := range []string{k + "internal/store/dynamo", k + "internal/artifact/s3", "github.com/aws/aws-lambda-go/lambda"} {
				if !slices.Contains(got, p) {
					t.Errorf("keel_role_%s lost %s", tc.role, p)
				}
			}
		})
	}
}

// TestRoleBuildsCompile compiles the packages whose files a role tag
// picks, under each role tag (and two at once, which must not compile).
func TestRoleBuildsCompile(t *testing.T) {
	pkgs := []string{"./internal/roles", "./internal/model/provider", "./internal/compose", "./internal/cli", "./cmd/keel"}
	for _, r := range []string{"api", "step", "approval", "finalize", "schedule", "sweep", "task"} {
		if out, err := goCmd(append([]string{"build", "-tags", roleBase + ",keel_role_" + r}, pkgs...)...); err != nil {
			t.Errorf("keel_role_%s: %v\n%s", r, err, out)
		}
	}
	if out, err := goCmd("build", "-tags", roleBase+",keel_role_api,keel_role_step", "./internal/roles"); err == nil || !strings.Contains(string(out), "Built redeclared") {
		t.Errorf("two role tags compiled (%v):\n%s", err, out)
	}
}
