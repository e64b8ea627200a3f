package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

func TestFunctions(t *testing.T) {
	var fns *Functions
	var storage *Storage
	var stack awscdk.Stack
	s := synthConstruct(t, func(st awscdk.Stack, appDir string) {
		stack = st
		storage = NewStorage(st, "Storage")
		fns = NewFunctions(st, "Functions", FunctionsProps{
			CodeDir: appDir,
			Table:   storage.Table,
			Bucket:  storage.Bucket,
		})
	})
	tableID := logicalID(stack, storage.Table)
	bucketID := logicalID(stack, storage.Bucket)

	lambdas := s.resources("AWS::Lambda::Function")
	if len(lambdas) != len(FunctionNames()) {
		t.Fatalf("%d functions, want %d", len(lambdas), len(FunctionNames()))
	}
	byName := map[string]string{}
	for name, fn := range fns.ByName() {
		byName[name] = logicalID(stack, fn)
	}
	for _, name := range FunctionNames() {
		t.Run(name, func(t *testing.T) {
			fn, ok := lambdas[byName[name]]
			if !ok {
				t.Fatalf("no function %s", byName[name])
			}
			p := fn.Props()
			for k, want := range map[string]string{"Runtime": "provided.al2023", "Handler": "bootstrap"} {
				if p[k] != want {
					t.Errorf("%s = %v, want %s", k, p[k], want)
				}
			}
			if got := jsonOf(p["Architectures"]); got != `["arm64"]` {
				t.Errorf("Architectures = %s, want [arm64]", got)
			}
			if got := jsonOf(p["TracingConfig"]); got != `{"Mode":"Active"}` {
				t.Errorf("TracingConfig = %s", got)
			}
			if _, named := p["FunctionName"]; named {
				t.Errorf("function has a hard-coded name: %v", p["FunctionName"])
			}
			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			if got := jsonOf(env["KEEL_TABLE"]); got != jsonOf(map[string]any{"Ref": tableID}) {
				t.Errorf("KEEL_TABLE = %s", got)
			}
			if got := jsonOf(env["KEEL_BUCKET"]); got != jsonOf(map[string]any{"Ref": bucketID}) {
				t.Errorf("KEEL_BUCKET = %s", got)
			}
			if got := env[EnvRole]; got != name {
				t.Errorf("%s = %v, want %s", EnvRole, got, name)
			}
			if got := jsonOf(p["LoggingConfig"]); !strings.Contains(got, `"LogFormat":"JSON"`) || !strings.Contains(got, `"LogGroup"`) {
				t.Errorf("LoggingConfig = %s", got)
			}
		})
	}

	t.Run("each function deploys its role's bootstrap, alone", func(t *testing.T) {
		keys := s.codeKeys(t)
		seen := map[string]bool{}
		for name, fn := range fns.ByName() {
			key := keys[logicalID(stack, fn)]
			if seen[key] {
				t.Errorf("%s shares its code asset", name)
			}
			seen[key] = true
			staged := s.stagedAsset(strings.TrimSuffix(key, ".zip"))
			boot, err := os.ReadFile(filepath.Join(staged, Bootstrap))
			if err != nil {
				t.Fatalf("staged code: %v", err)
			}
			if string(boot) != placeholderBootstrap(name) {
				t.Errorf("%s deploys %q, want its role's bootstrap", name, boot)
			}
			if entries, _ := os.ReadDir(staged); len(entries) != 1 {
				t.Errorf("%s: the code asset holds %d entries, want only %s", name, len(entries), Bootstrap)
			}
		}
	})

	t.Run("grants", func(t *testing.T) {
		// Who may put artifacts: api, step, finalize. Nobody may delete.
		putters := map[string]bool{}
		for _, st := range s.policyStatements() {
			acts := st.Actions()
			if slices.Contains(acts, "s3:PutObject") {
				putters[st.Owner] = true
			}
			for _, a := range acts {
				if strings.HasPrefix(a, "s3:Delete") {
					t.Errorf("%s may %s", st.Owner, a)
				}
			}
		}
		for name, fn := range fns.ByName() {
			role := logicalID(stack, fn.Role())
			want := name == "api" || name == "step" || name == "finalize"
			got := false
			for owner := range putters {
				if slices.Contains(s.rolesOf(owner), role) {
					got = true
				}
			}
			if got != want {
				t.Errorf("%s may put artifacts: %v, want %v", name, got, want)
			}
		}
	})
}
