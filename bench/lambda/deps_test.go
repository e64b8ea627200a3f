package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/testbin"
)

// deps lists the packages the stock program links for linux/arm64 with
// tags.
func deps(t *testing.T, tags string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, "./cmd/keel")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %s: %v", tags, err)
	}
	return strings.Fields(string(out))
}

const k = "github.com/keelrun/keel/"

// TestLambdaBuildLeavesOut checks what each build tag keeps out of the
// deployed binary, against the default build that has it all (so the
// check can fail): keel_lambda leaves out SQLite, keel dev, its local
// state machine and the crash suite with its test servers; each
// keel_no_<provider> its provider's SDK.
func TestLambdaBuildLeavesOut(t *testing.T) {
	local := []string{"modernc.org/sqlite", k + "internal/backend/store/sqlite", k + "internal/local/devserver", k + "internal/aws/states",
		k + "internal/proof/crash", k + "internal/proof/crash/localaws", "github.com/truora/minidyn", "github.com/johannesboyne/gofakes3"}
	providers := map[string]string{
		"keel_no_anthropic": k + "internal/backend/model/anthropic",
		"keel_no_openai":    k + "internal/backend/model/openai",
		"keel_no_bedrock":   "github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
	}
	def := deps(t, "lambda.norpc")
	for _, p := range []string{"modernc.org/sqlite", k + "internal/local/devserver", k + "internal/proof/crash"} {
		if !slices.Contains(def, p) {
			t.Errorf("the default build lacks %s: the check below proves nothing", p)
		}
	}
	lam := deps(t, "lambda.norpc,keel_lambda")
	for _, p := range local {
		if slices.Contains(lam, p) {
			t.Errorf("-tags keel_lambda still links %s", p)
		}
	}
	// What every role needs stays in.
	for _, p := range []string{k + "internal/backend/store/dynamo", k + "internal/backend/artifact/s3", k + "internal/aws/roles", "github.com/aws/aws-lambda-go/lambda"} {
		if !slices.Contains(lam, p) {
			t.Errorf("-tags keel_lambda lost %s", p)
		}
	}
	for tag, sdk := range providers {
		if !slices.Contains(lam, sdk) {
			t.Errorf("keel_lambda alone lacks %s", sdk)
		}
		got := deps(t, "lambda.norpc,keel_lambda,"+tag)
		if slices.Contains(got, sdk) {
			t.Errorf("-tags %s still links %s", tag, sdk)
		}
		for other, osdk := range providers {
			if other != tag && !slices.Contains(got, osdk) {
				t.Errorf("-tags %s also dropped %s", tag, osdk)
			}
		}
	}
}

// goCmd runs go in the repository root for linux/arm64.
func goCmd(args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	return cmd.CombinedOutput()
}

// TestLambdaBuildCompiles builds the smallest tag set: the stand-ins of
// what it leaves out must compile.
func TestLambdaBuildCompiles(t *testing.T) {
	testbin.SkipShort(t, "builds the stock program for linux/arm64")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc,keel_lambda,keel_no_anthropic,keel_no_openai,keel_no_bedrock",
		"-o", filepath.Join(t.TempDir(), "bootstrap"), "./cmd/keel")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
