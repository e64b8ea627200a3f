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

// fakeAssetRoot is a repository root with placeholder bootstraps and
// Dockerfile (synthesis stages and hashes them, never runs them) and the
// real run.asl.json, so the stack is synthesized against the definition it
// will deploy.
func fakeAssetRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel string, data []byte) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range FunctionNames() {
		write(filepath.Join("dist", name, "bootstrap"), []byte("#!/bin/sh\n# placeholder "+name+"\n"))
	}
	write(TaskDockerfile, []byte("FROM scratch\n"))
	def, err := os.ReadFile(realDefinitionFile)
	if err != nil {
		t.Fatalf("the real state machine definition: %v", err)
	}
	write(filepath.Join("stepfunctions", "run.asl.json"), def)
	return root
}

// realDefinitionFile is the repository's run.asl.json, from infra/cdk.
var realDefinitionFile = filepath.Join("..", "..", "stepfunctions", "run.asl.json")

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

// synth builds a stack from props (AssetRoot defaults to a fake root) in a
// fresh app with cdk.json's context and the fake environment variables the
// CLI would set, and synthesizes it to a temporary cloud assembly.
func synth(t *testing.T, props KeelStackProps) synthesized {
	t.Helper()
	t.Setenv("CDK_DEFAULT_ACCOUNT", fakeAccount)
	t.Setenv("CDK_DEFAULT_REGION", fakeRegion)
	if props.AssetRoot == "" {
		props.AssetRoot = fakeAssetRoot(t)
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
// for the tests of one construct.
func synthConstruct(t *testing.T, build func(stack awscdk.Stack, root string)) synthesized {
	t.Helper()
	t.Setenv("CDK_DEFAULT_ACCOUNT", fakeAccount)
	t.Setenv("CDK_DEFAULT_REGION", fakeRegion)
	root := fakeAssetRoot(t)
	ctx := cdkJSONContext(t)
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	stack := awscdk.NewStack(app, jsii.String("Test"), nil)
	build(stack, root)
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
