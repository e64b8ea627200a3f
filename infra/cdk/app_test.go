package main

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDeployedApp builds real apps (a linux/arm64 go build per role each)
// and checks the template deploys exactly those binaries: each function
// its own role's bootstrap, with its KEEL_ROLE, and the task image built
// from the task's bootstrap with KEEL_ROLE=task.
func TestDeployedApp(t *testing.T) {
	cases := []struct {
		name string
		app  string // keel:app; empty: the default
	}{
		{name: "stock app ./cmd/keel"},
		{name: "external app in its own module", app: "./infra/cdk/testdata/extapp"},
		// A user's agent program on Keel's public API, in a module of its
		// own with a replace to this checkout: what `make synth
		// APP=./examples/triage` deploys.
		{name: "the triage example program", app: "./examples/triage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			props := buildApp(t, KeelStackProps{AssetRoot: repoRoot, App: tc.app})
			bins := map[string][]byte{}
			for _, role := range append(FunctionNames(), RoleTask) {
				path := filepath.Join(RoleDir(props.AppDir(), role), Bootstrap)
				bin, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				checkLinuxARM64Static(t, path)
				bins[role] = bin
			}
			s := synth(t, props)
			checkRoleBinaries(t, s, bins)
		})
	}
}

// checkRoleBinaries asserts that every function runs its role's bootstrap
// (bins[role]) with its role, and the task image is bins[RoleTask].
func checkRoleBinaries(t *testing.T, s synthesized, bins map[string][]byte) {
	t.Helper()
	stack := s.Stack.Stack
	lambdas := s.resources("AWS::Lambda::Function")
	if len(lambdas) != len(FunctionNames()) {
		t.Fatalf("%d functions, want %d", len(lambdas), len(FunctionNames()))
	}
	seen := map[string]string{}
	keys := s.codeKeys(t)
	for name, fn := range s.Stack.Functions.ByName() {
		r := lambdas[logicalID(stack, fn)]
		p := r.Props()
		if p["Handler"] != Bootstrap || p["Runtime"] != "provided.al2023" || jsonOf(p["Architectures"]) != `["arm64"]` {
			t.Errorf("%s: handler %v, runtime %v, architectures %s", name, p["Handler"], p["Runtime"], jsonOf(p["Architectures"]))
		}
		if got := envOf(r)[EnvRole]; got != name {
			t.Errorf("%s: %s = %v, want %s", name, EnvRole, got, name)
		}
		key := keys[logicalID(stack, fn)]
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s deploy one code asset", name, other)
		}
		seen[key] = name
		staged := s.stagedAsset(strings.TrimSuffix(key, ".zip"))
		got, err := os.ReadFile(filepath.Join(staged, Bootstrap))
		if err != nil {
			t.Fatalf("%s: staged code: %v", name, err)
		}
		if !bytes.Equal(got, bins[name]) {
			t.Errorf("%s: the code asset is not its role's bootstrap (%d bytes, built %d)", name, len(got), len(bins[name]))
		}
		if entries, _ := os.ReadDir(staged); len(entries) != 1 {
			t.Errorf("%s: the code asset holds %d entries, want only %s", name, len(entries), Bootstrap)
		}
	}

	env := s.containerEnv(t)
	if got := env[EnvRole]; got != RoleTask {
		t.Errorf("container %s = %v, want %s", EnvRole, got, RoleTask)
	}
	for _, k := range []string{"KEEL_RUN_ID", "KEEL_TASK_TOKEN"} {
		if _, set := env[k]; set {
			t.Errorf("container sets %s statically; RunOnFargate's overrides give it per run (TestRunStateMachine)", k)
		}
	}

	imgs := s.dockerImages(t)
	if len(imgs) != 1 {
		t.Fatalf("%d docker images, want 1", len(imgs))
	}
	for hash, src := range imgs {
		if src.DockerFile != TaskDockerfile || src.Platform != "linux/arm64" {
			t.Errorf("image source = %+v", src)
		}
		ctxDir := filepath.Join(s.OutDir, src.Directory)
		got, err := os.ReadFile(filepath.Join(ctxDir, Bootstrap))
		if err != nil {
			t.Fatalf("image build context: %v", err)
		}
		if !bytes.Equal(got, bins[RoleTask]) {
			t.Errorf("the image is not built from the task's bootstrap")
		}
		if df, err := os.ReadFile(filepath.Join(ctxDir, TaskDockerfile)); err != nil || !bytes.Equal(df, taskDockerfile) {
			t.Errorf("image Dockerfile: %v %q", err, df)
		}
		if image := jsonOf(s.only(t, "AWS::ECS::TaskDefinition").Props()["ContainerDefinitions"]); !strings.Contains(image, hash) {
			t.Errorf("the container image is not asset %s: %s", hash, image)
		}
	}
}

// checkLinuxARM64Static asserts path is a static linux/arm64 executable:
// what provided.al2023 on arm64 and distroless/static can run.
func checkLinuxARM64Static(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("bootstrap is not an ELF binary: %v", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Type != elf.ET_EXEC {
		t.Errorf("bootstrap: machine %v, type %v, want an arm64 executable", f.Machine, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("bootstrap is dynamically linked (CGO_ENABLED=0 missing?)")
		}
	}
}

// TestRebuildSameAssets: building unchanged sources again, elsewhere, gives
// the same asset hashes, so a repeated synth changes nothing to deploy.
func TestRebuildSameAssets(t *testing.T) {
	hashes := func() (code string, image string) {
		s := synth(t, buildApp(t, KeelStackProps{AssetRoot: repoRoot, App: "./infra/cdk/testdata/extapp"}))
		// One code asset per role: compare them all, in a fixed order.
		var keys []string
		for _, k := range s.codeKeys(t) {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		code = strings.Join(keys, ",")
		for h := range s.dockerImages(t) {
			image = h
		}
		return code, image
	}
	code1, image1 := hashes()
	code2, image2 := hashes()
	if code1 != code2 || image1 != image2 {
		t.Errorf("rebuild changed the assets: code %s → %s, image %s → %s", code1, code2, image1, image2)
	}
}

func TestAppDir(t *testing.T) {
	root := filepath.Join(string(filepath.Separator), "repo")
	dir := func(p KeelStackProps) string { return p.AppDir() }
	stock := dir(KeelStackProps{AssetRoot: root})
	if filepath.Dir(stock) != filepath.Join(root, "dist", "app") || !strings.HasPrefix(filepath.Base(stock), "keel-") {
		t.Errorf("stock app dir = %s, want %s/dist/app/keel-<hash>", stock, root)
	}
	for _, same := range []string{"./cmd/keel", "cmd/keel", "cmd/keel/", filepath.Join(root, "cmd", "keel")} {
		if got := dir(KeelStackProps{AssetRoot: root, App: same}); got != stock {
			t.Errorf("App %q: dir %s, want the stock app's %s", same, got, stock)
		}
	}
	triage := dir(KeelStackProps{AssetRoot: root, App: "./examples/triage"})
	other := dir(KeelStackProps{AssetRoot: root, App: "./other/triage"})
	if !strings.HasPrefix(filepath.Base(triage), "triage-") || triage == other {
		t.Errorf("two apps named triage: %s and %s, want distinct triage-<hash> dirs", triage, other)
	}
	if got := dir(KeelStackProps{AssetRoot: root, BuildDir: "/tmp/b"}); got != "/tmp/b" {
		t.Errorf("BuildDir ignored: %s", got)
	}
}

func TestResolveApp(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module example.com/r\n")
	writeFile(t, filepath.Join(root, "cmd", "keel", "main.go"), "package main\n")
	writeFile(t, filepath.Join(root, "examples", "triage", "go.mod"), "module example.com/triage\n")
	writeFile(t, filepath.Join(root, "examples", "triage", "cmd", "bot", "main.go"), "package main\n")
	cases := []struct {
		app     string
		module  string // relative to root
		pkg     string // go build's package argument
		wantErr string
	}{
		{app: "", module: ".", pkg: "./cmd/keel"},
		{app: "./examples/triage", module: "examples/triage", pkg: "."},
		{app: "./examples/triage/cmd/bot", module: "examples/triage", pkg: "./cmd/bot"},
		{app: "./examples", module: ".", pkg: "./examples"},
		{app: "./missing", wantErr: `keel:app "./missing"`},
		{app: "./go.mod", wantErr: "not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.app, func(t *testing.T) {
			app, err := KeelStackProps{AssetRoot: root, App: tc.app}.ResolveApp()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tc.module); app.Module != want {
				t.Errorf("module root %s, want %s", app.Module, want)
			}
			args, err := buildArgs(app, "step", "/out/bootstrap")
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"build", "-trimpath", "-buildvcs=false", "-tags", "lambda.norpc,keel_lambda,grpcnotrace,keel_role_step,keel_env_aws", "-ldflags", "-s -w", "-o", "/out/bootstrap", tc.pkg}
			if !slices.Equal(args, want) {
				t.Errorf("go %v, want go %v", args, want)
			}
			// keel:buildTags add to the base tags (a build that leaves
			// out the providers it does not use).
			app.BuildTags = []string{"keel_no_openai", "keel_no_anthropic"}
			if args, _ = buildArgs(app, "api", "/out/bootstrap"); args[4] != "lambda.norpc,keel_lambda,grpcnotrace,keel_role_api,keel_env_aws,keel_no_models,keel_no_openai,keel_no_anthropic" {
				t.Errorf("-tags %s with keel:buildTags", args[4])
			}
		})
	}
}
