package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/proof/awslocal"
	"github.com/keelrun/keel/internal/testbin"
)

const (
	awsConfigPkg  = "github.com/aws/aws-sdk-go-v2/config"
	secretsPkg    = "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	grpcPkg       = "google.golang.org/grpc"
	jsonschemaPkg = "github.com/santhosh-tekuri/jsonschema/v6"
	protoImplPkg  = "google.golang.org/protobuf/internal/impl"
)

// roleBase are the tags of every deployed bootstrap (infra/cdk).
const roleBase = awslocal.CDKBuildTags

// TestRoleBuildsLeaveOut checks what each role's bootstrap does not
// import, against the build without a role tag (so each check can fail):
// no model SDK where the role calls no model, no SQLite or keel dev, and —
// with grpcnotrace — no golang.org/x/net/trace, whose handlers reach
// html/template and with it reflect's MethodByName, which makes the linker
// keep every exported method of every type (all of S3's operations). What
// a role tag leaves out by reachability rather than by import (the command
// line) is checked on a built binary by TestRoleBuildLinks.
func TestRoleBuildsLeaveOut(t *testing.T) {
	sdks := []string{k + "internal/backend/model/anthropic", k + "internal/backend/model/openai", "github.com/aws/aws-sdk-go-v2/service/bedrockruntime"}
	all := deps(t, roleBase)
	for _, p := range sdks {
		if !slices.Contains(all, p) {
			t.Errorf("the build without a role tag lacks %s: the checks below prove nothing", p)
		}
	}
	if got := deps(t, "lambda.norpc"); !slices.Contains(got, "golang.org/x/net/trace") {
		t.Errorf("without grpcnotrace golang.org/x/net/trace is not linked: the check below proves nothing")
	}
	for _, p := range []string{awsConfigPkg, secretsPkg, jsonschemaPkg} {
		if !slices.Contains(all, p) {
			t.Errorf("the build without a role tag lacks %s: the checks below prove nothing", p)
		}
	}
	// Without keel_lambda the official OTLP exporters are linked.
	for _, p := range []string{grpcPkg, protoImplPkg} {
		if !slices.Contains(deps(t, "lambda.norpc"), p) {
			t.Errorf("the build without keel_lambda lacks %s: the checks below prove nothing", p)
		}
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
			got := deps(t, awslocal.RoleBuildTags(tc.role))
			// The OTLP exporters are otlphttp's (protowire): no gRPC, no
			// protobuf runtime.
			for _, p := range []string{"golang.org/x/net/trace", "modernc.org/sqlite", k + "internal/local/devserver", grpcPkg, protoImplPkg} {
				if slices.Contains(got, p) {
					t.Errorf("keel_role_%s links %s", tc.role, p)
				}
			}
			for _, p := range sdks {
				if slices.Contains(got, p) != tc.models {
					t.Errorf("keel_role_%s: links %s = %v, want %v", tc.role, p, !tc.models, tc.models)
				}
			}
			// A function's AWS configuration is its environment
			// (awsbackend.EnvConfig), the task's on Fargate too (its
			// container credentials endpoint): no default loader.
			if slices.Contains(got, awsConfigPkg) {
				t.Errorf("keel_role_%s links %s", tc.role, awsConfigPkg)
			}
			// Only a role that reads a model API key links Secrets Manager;
			// only one that runs tool calls the JSON Schema validator.
			for _, p := range []string{secretsPkg, jsonschemaPkg} {
				if got := slices.Contains(got, p); got != tc.models {
					t.Errorf("keel_role_%s: links %s = %v, want %v", tc.role, p, got, tc.models)
				}
			}
			// Every role keeps its records and the Lambda runtime client.
			for _, p := range []string{k + "internal/backend/store/dynamo", k + "internal/backend/artifact/s3", "github.com/aws/aws-lambda-go/lambda"} {
				if !slices.Contains(got, p) {
					t.Errorf("keel_role_%s lost %s", tc.role, p)
				}
			}
		})
	}
}

// TestRoleBuildLinks builds the step role's bootstrap (this machine's
// architecture, with symbols) and checks what the role constant compiled
// out, though its packages are still imported: the command line (its
// dispatch, the API client, keel init's templates) and the Step Functions
// client's operations (step answers through its return value), and that
// x/net/trace's absence let the linker drop the S3 operations Keel never
// calls.
func TestRoleBuildLinks(t *testing.T) {
	testbin.SkipShort(t, "builds the step role's bootstrap")
	if imp := deps(t, awslocal.RoleBuildTags("step")); !slices.Contains(imp, "text/template") || !slices.Contains(imp, k+"internal/client") {
		t.Fatalf("keel_role_step no longer imports the CLI's packages: check the symbols below against another build")
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-trimpath", "-tags", awslocal.RoleBuildTags("step"), "-o", bin, "./cmd/keel")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// What the narrowed binary answers outside its role.
	for _, tc := range []struct {
		name, role string
		code       int
		says       string
	}{
		{name: "no KEEL_ROLE: no command line", code: 2, says: "this binary serves only the step role (built with -tags keel_role_step)"},
		{name: "another role", role: "api", code: 1, says: "KEEL_ROLE=api: this binary serves only the step role"},
	} {
		cmd := exec.Command(bin, "runs")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KEEL_ROLE=" + tc.role, "AWS_LAMBDA_RUNTIME_API=127.0.0.1:9"}
		msg, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.code || !strings.Contains(string(msg), tc.says) {
			t.Errorf("%s: %v, %s; want exit %d saying %q", tc.name, err, msg, tc.code, tc.says)
		}
	}
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	syms := string(out)
	for _, want := range []string{k + "internal/compose.NewStep", "service/s3.(*Client).PutObject"} {
		if !strings.Contains(syms, want) {
			t.Errorf("the step bootstrap lacks %s", want)
		}
	}
	for _, absent := range []string{k + "internal/cli.execute", k + "internal/client.", "text/template.(*state).evalField",
		k + "internal/compose.NewAPI", "service/sfn.(*Client).StartExecution", "service/s3.(*Client).PutBucketLifecycleConfiguration"} {
		if strings.Contains(syms, absent) {
			t.Errorf("the step bootstrap links %s", absent)
		}
	}
}

// TestRoleBuildsCompile compiles the packages whose files a role tag
// picks under a role that calls no model and one that does (the roles
// differ otherwise only by the constant roles.Built; the step bootstrap
// is also built whole by TestRoleBuildLinks, and every role's by the CDK
// app's tests), and two role tags at once, which must not compile.
func TestRoleBuildsCompile(t *testing.T) {
	testbin.SkipShort(t, "compiles five packages under two role tags for linux/arm64")
	pkgs := []string{"./internal/aws/roles", "./internal/backend/model/provider", "./internal/compose", "./internal/cli", "./cmd/keel"}
	for _, r := range []string{"api", "task"} {
		if out, err := goCmd(append([]string{"build", "-tags", awslocal.RoleBuildTags(r)}, pkgs...)...); err != nil {
			t.Errorf("keel_role_%s: %v\n%s", r, err, out)
		}
	}
	// The tool registry of a role that validates no call (no JSON Schema
	// validator linked) runs its own test on this machine.
	test := exec.Command("go", "test", "-count=1", "-tags", "keel_role_api", "-run", "TestRegistryWithoutValidator", "./internal/kernel/tool")
	test.Dir = "../.."
	if out, err := test.CombinedOutput(); err != nil {
		t.Errorf("go test -tags keel_role_api ./internal/kernel/tool: %v\n%s", err, out)
	}
	if out, err := goCmd("build", "-tags", roleBase+",keel_role_api,keel_role_step", "./internal/aws/roles"); err == nil || !strings.Contains(string(out), "Built redeclared") {
		t.Errorf("two role tags compiled (%v):\n%s", err, out)
	}
}
