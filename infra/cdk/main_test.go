package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the CDK app (as `cdk synth` runs
// `go run .`): with KEEL_CDK_TEST_APP=1 it runs main's run and exits.
func TestMain(m *testing.M) {
	if os.Getenv("KEEL_CDK_TEST_APP") == "1" {
		os.Exit(run())
	}
	os.Exit(m.Run())
}

// runApp runs the app the way the CDK CLI does: context (cdk.json's plus
// extra) in CDK_CONTEXT_JSON, the cloud assembly directory in CDK_OUTDIR,
// fake account and region, and no AWS credentials.
func runApp(t *testing.T, extra map[string]any) (outdir string, stderr string, err error) {
	t.Helper()
	ctx := cdkJSONContext(t)
	maps.Copy(ctx, extra)
	raw, jerr := json.Marshal(ctx)
	if jerr != nil {
		t.Fatal(jerr)
	}
	outdir = t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CDK_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"KEEL_CDK_TEST_APP=1",
		"CDK_OUTDIR="+outdir,
		"CDK_CONTEXT_JSON="+string(raw),
		"CDK_DEFAULT_ACCOUNT="+fakeAccount,
		"CDK_DEFAULT_REGION="+fakeRegion,
		"AWS_EC2_METADATA_DISABLED=true",
	)
	var buf bytes.Buffer
	cmd.Stderr = &buf
	err = cmd.Run()
	return outdir, buf.String(), err
}

func TestApp(t *testing.T) {
	t.Run("synthesizes the named stack", func(t *testing.T) {
		root := fakeAssetRoot(t)
		out, stderr, err := runApp(t, map[string]any{CtxAssetRoot: root, CtxStackName: "KeelTest", CtxNATGateways: "2"})
		if err != nil {
			t.Fatalf("app: %v\n%s", err, stderr)
		}
		raw, err := os.ReadFile(filepath.Join(out, "KeelTest.template.json"))
		if err != nil {
			t.Fatal(err)
		}
		var tmpl map[string]any
		if err := json.Unmarshal(raw, &tmpl); err != nil {
			t.Fatal(err)
		}
		s := synthesized{JSON: tmpl}
		nats := s.resources("AWS::EC2::NatGateway")
		if len(nats) != 2 {
			t.Errorf("%d NAT gateways, want the 2 from context", len(nats))
		}
		// The app built the stock app (the fake root's cmd/keel, a real
		// program) into its default directory, and deploys it.
		for _, role := range append(FunctionNames(), RoleTask) {
			checkLinuxARM64Static(t, filepath.Join(RoleDir(KeelStackProps{AssetRoot: root}.AppDir(), role), Bootstrap))
		}
		if keys := s.codeKeys(t); len(keys) != len(FunctionNames()) {
			t.Errorf("%d functions with code, want %d", len(keys), len(FunctionNames()))
		}
	})
	t.Run("refuses an incomplete asset root", func(t *testing.T) {
		_, stderr, err := runApp(t, map[string]any{CtxAssetRoot: t.TempDir()})
		if err == nil {
			t.Fatal("app succeeded without an app or a definition")
		}
		for _, want := range []string{"invalid configuration", `keel:app "./cmd/keel"`, "does not exist", "run.asl.json"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
	})
	t.Run("refuses a keel:app that does not exist", func(t *testing.T) {
		_, stderr, err := runApp(t, map[string]any{CtxAssetRoot: fakeAssetRoot(t), CtxApp: "./examples/nope"})
		if err == nil {
			t.Fatal("app succeeded without its keel:app")
		}
		for _, want := range []string{"invalid configuration", `keel:app "./examples/nope"`, "does not exist"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
	})
	t.Run("a build failure names keel:app", func(t *testing.T) {
		root := fakeAssetRoot(t)
		writeFile(t, filepath.Join(root, "cmd", "keel", "main.go"), "package main\n\nfunc main() { undefinedCall() }\n")
		out, stderr, err := runApp(t, map[string]any{CtxAssetRoot: root})
		if err == nil {
			t.Fatal("app succeeded with an app that does not compile")
		}
		for _, want := range []string{"building the app failed", `keel:app "./cmd/keel"`, "go build", "undefinedCall"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if tmpls, _ := filepath.Glob(filepath.Join(out, "*.template.json")); len(tmpls) != 0 {
			t.Errorf("a template was synthesized anyway: %v", tmpls)
		}
	})
}
