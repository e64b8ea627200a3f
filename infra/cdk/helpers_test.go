package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Fake account and region: synthesis must never need real ones (no
// lookups, no credentials).
const (
	fakeAccount = "111111111111"
	fakeRegion  = "eu-west-1"
)

// fakeAssetRoot is a repository root whose stock app (cmd/keel) is a
// trivial main package in a module of its own (so the app, run as a
// process, builds it for real in a second) and with the real run.asl.json,
// so the stack is synthesized against the definition it will deploy.
func fakeAssetRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module example.com/fakekeel\n\ngo 1.26\n")
	writeFile(t, filepath.Join(root, "cmd", "keel", "main.go"), "package main\n\nfunc main() {}\n")
	def, err := os.ReadFile(realDefinitionFile)
	if err != nil {
		t.Fatalf("the real state machine definition: %v", err)
	}
	writeFile(t, filepath.Join(root, "stepfunctions", "run.asl.json"), string(def))
	return root
}

// placeholderBootstrap is what fakeAppDir stages instead of role's
// binary: synthesis stages and hashes the code, never runs it. Each role's
// differs, as the real ones do.
func placeholderBootstrap(role string) string {
	return "#!/bin/sh\n# placeholder keel app, role " + role + "\n"
}

// fakeAppDir is an AppDir as BuildApp leaves it, with placeholder
// binaries: for the tests of constructs that only stage them.
func fakeAppDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, role := range append(FunctionNames(), RoleTask, RoleCommands) {
		writeFile(t, filepath.Join(RoleDir(dir, role), Bootstrap), placeholderBootstrap(role))
	}
	writeFile(t, filepath.Join(RoleDir(dir, RoleTask), TaskDockerfile), string(taskDockerfile))
	return dir
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
		t.Fatal(err)
	}
}

// repoRoot is the repository root, from infra/cdk.
var repoRoot = filepath.Join("..", "..")

// realDefinitionFile is the repository's run.asl.json, from infra/cdk.
var realDefinitionFile = filepath.Join(repoRoot, "stepfunctions", "run.asl.json")

// cdkJSONContext is the context of cdk.json (the feature flags `cdk synth`
// runs with), so the in-process synthesis matches the CLI's.
func cdkJSONContext(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		App     string         `json:"app"`
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("cdk.json: %v", err)
	}
	return f.Context
}

// synthesized is one synthesized stack.
type synthesized struct {
	Stack    *KeelStack
	Template assertions.Template
	// JSON is the template as plain Go values, for walks assertions
	// cannot express.
	JSON   map[string]any
	OutDir string
	// Missing are context keys synthesis would have to look up.
	Missing int
}

// buildApp runs BuildApp for props (its BuildDir a temporary directory
// unless set): a real linux/arm64 go build of props.App.
func buildApp(t *testing.T, props KeelStackProps) KeelStackProps {
	t.Helper()
	if props.BuildDir == "" {
		props.BuildDir = t.TempDir()
	}
	if err := BuildApp(t.Context(), props); err != nil {
		t.Fatalf("BuildApp: %v", err)
	}
	return props
}

// synth builds a stack from props in a fresh app with cdk.json's context
// and the fake environment variables the CLI would set, and synthesizes it
// to a temporary cloud assembly. Without an AssetRoot, props get a fake
// root and a fakeAppDir; otherwise props.AppDir() must hold a build
// (buildApp).
func synth(t *testing.T, props KeelStackProps) synthesized {
	t.Helper()
	t.Setenv("CDK_DEFAULT_ACCOUNT", fakeAccount)
	t.Setenv("CDK_DEFAULT_REGION", fakeRegion)
	if props.AssetRoot == "" {
		props.AssetRoot = fakeAssetRoot(t)
		props.BuildDir = fakeAppDir(t)
	}
	if err := props.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	ctx := cdkJSONContext(t)
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	ks := newKeelStack(app, "Keel", props)
	asm := app.Synth(nil)

	art := asm.GetStackArtifact(ks.Stack.ArtifactId())
	raw, err := json.Marshal(art.Template())
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	// The manifest's "missing" lists context the CLI would have to look
	// up (with credentials) before synthesizing again. Read from the file:
	// the jsii proxy of Manifest() cannot convert it.
	mraw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Missing []json.RawMessage `json:"missing"`
	}
	if err := json.Unmarshal(mraw, &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	return synthesized{
		Stack:    ks,
		Template: assertions.Template_FromJSON(&tmpl, nil),
		JSON:     tmpl,
		OutDir:   out,
		Missing:  len(manifest.Missing),
	}
}

// synthConstruct synthesizes a bare stack holding what build adds to it,
// for the tests of one construct; appDir is a fakeAppDir.
func synthConstruct(t *testing.T, build func(stack awscdk.Stack, appDir string)) synthesized {
	t.Helper()
	t.Setenv("CDK_DEFAULT_ACCOUNT", fakeAccount)
	t.Setenv("CDK_DEFAULT_REGION", fakeRegion)
	appDir := fakeAppDir(t)
	ctx := cdkJSONContext(t)
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	stack := awscdk.NewStack(app, jsii.String("Test"), nil)
	build(stack, appDir)
	asm := app.Synth(nil)
	raw, err := json.Marshal(asm.GetStackArtifact(stack.ArtifactId()).Template())
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	return synthesized{Template: assertions.Template_FromJSON(&tmpl, nil), JSON: tmpl, OutDir: out}
}

// resource is one template resource.
type resource struct {
	ID   string
	Type string
	Raw  map[string]any
}

// Props returns the resource's Properties.
func (r resource) Props() map[string]any {
	p, _ := r.Raw["Properties"].(map[string]any)
	return p
}

// resources returns the template's resources of type typ, keyed by logical id.
func (s synthesized) resources(typ string) map[string]resource {
	out := map[string]resource{}
	all, _ := s.JSON["Resources"].(map[string]any)
	for id, v := range all {
		r, _ := v.(map[string]any)
		if r["Type"] == typ {
			out[id] = resource{ID: id, Type: typ, Raw: r}
		}
	}
	return out
}

// only returns the single resource of type typ.
func (s synthesized) only(t *testing.T, typ string) resource {
	t.Helper()
	rs := s.resources(typ)
	if len(rs) != 1 {
		t.Fatalf("%d resources of type %s, want 1", len(rs), typ)
	}
	for _, r := range rs {
		return r
	}
	panic("unreachable")
}

// logicalID returns the logical id of an L2 construct's CloudFormation resource.
func logicalID(stack awscdk.Stack, c constructs.IConstruct) string {
	return *stack.GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
}

// stagedAsset returns the path of a file or directory asset in the cloud
// assembly, from the S3 object key the template references.
func (s synthesized) stagedAsset(key string) string {
	return filepath.Join(s.OutDir, "asset."+key)
}

// jsonOf renders v compactly, for substring checks and messages.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// countTypes asserts the number of resources of each type in want.
func countTypes(t *testing.T, s synthesized, want map[string]int) {
	t.Helper()
	for typ, n := range want {
		s.Template.ResourceCountIs(jsii.String(typ), jsii.Number(float64(n)))
	}
}

// policyStatements returns every statement of every AWS::IAM::Policy and
// inline role policy, with the logical id of the policy that holds it.
func (s synthesized) policyStatements() []policyStatement {
	var out []policyStatement
	add := func(owner string, doc any) {
		d, _ := doc.(map[string]any)
		sts, _ := d["Statement"].([]any)
		for _, st := range sts {
			m, _ := st.(map[string]any)
			out = append(out, policyStatement{Owner: owner, Raw: m})
		}
	}
	for id, r := range s.resources("AWS::IAM::Policy") {
		add(id, r.Props()["PolicyDocument"])
	}
	for id, r := range s.resources("AWS::IAM::Role") {
		pols, _ := r.Props()["Policies"].([]any)
		for _, p := range pols {
			m, _ := p.(map[string]any)
			add(id, m["PolicyDocument"])
		}
	}
	return out
}

// policyStatement is one IAM statement and the policy (or role) holding it.
type policyStatement struct {
	Owner string
	Raw   map[string]any
}

// Actions returns the statement's actions as a list.
func (p policyStatement) Actions() []string { return stringList(p.Raw["Action"]) }

// stringList reads a string or a list of strings.
func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// roleOf returns the logical ids of the roles a policy is attached to.
func (s synthesized) rolesOf(policyID string) []string {
	r, ok := s.resources("AWS::IAM::Policy")[policyID]
	if !ok {
		return nil
	}
	var out []string
	roles, _ := r.Props()["Roles"].([]any)
	for _, x := range roles {
		if m, ok := x.(map[string]any); ok {
			if ref, ok := m["Ref"].(string); ok {
				out = append(out, ref)
			}
		}
	}
	return out
}

// imageSource is a Docker image asset's source in the asset manifest.
type imageSource struct {
	Directory  string `json:"directory"`
	DockerFile string `json:"dockerFile"`
	Platform   string `json:"platform"`
}

// dockerImages returns the sources of the Docker image assets of every
// stack in the cloud assembly, keyed by asset hash.
func (s synthesized) dockerImages(t *testing.T) map[string]imageSource {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.OutDir, "*.assets.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no asset manifest in %s (%v)", s.OutDir, err)
	}
	out := map[string]imageSource{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var manifest struct {
			DockerImages map[string]struct {
				Source imageSource `json:"source"`
			} `json:"dockerImages"`
		}
		if err := json.Unmarshal(raw, &manifest); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for hash, img := range manifest.DockerImages {
			out[hash] = img.Source
		}
	}
	return out
}

// codeKeys returns the S3 keys of the functions' code, by logical id.
func (s synthesized) codeKeys(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, fn := range s.resources("AWS::Lambda::Function") {
		code, _ := fn.Props()["Code"].(map[string]any)
		key, ok := code["S3Key"].(string)
		if !ok {
			t.Fatalf("function %s: code is not an S3 asset: %s", id, jsonOf(code))
		}
		out[id] = key
	}
	return out
}

// envOf returns a function's environment variables.
func envOf(fn resource) map[string]any {
	env, _ := fn.Props()["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

// containerEnv returns the environment of the task's container as name → value.
func (s synthesized) containerEnv(t *testing.T) map[string]any {
	t.Helper()
	defs, _ := s.only(t, "AWS::ECS::TaskDefinition").Props()["ContainerDefinitions"].([]any)
	if len(defs) != 1 {
		t.Fatalf("%d container definitions, want 1", len(defs))
	}
	out := map[string]any{}
	env, _ := defs[0].(map[string]any)["Environment"].([]any)
	for _, e := range env {
		kv, _ := e.(map[string]any)
		out[kv["Name"].(string)] = kv["Value"]
	}
	return out
}
