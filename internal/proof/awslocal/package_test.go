package awslocal

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unzip reads a package: name → (mode, bytes).
func unzip(t *testing.T, b []byte) map[string]struct {
	mode os.FileMode
	data []byte
} {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		mode os.FileMode
		data []byte
	}{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = struct {
			mode os.FileMode
			data []byte
		}{f.Mode(), data}
	}
	return out
}

func TestFunctionZip(t *testing.T) {
	write := func(t *testing.T, files map[string]os.FileMode) string {
		dir := t.TempDir()
		for name, mode := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("content of "+name), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil { // past the umask
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name   string
		files  map[string]os.FileMode
		want   map[string]os.FileMode
		errHas string
	}{
		{name: "bootstrap only", files: map[string]os.FileMode{"bootstrap": 0o755}, want: map[string]os.FileMode{"bootstrap": 0o755}},
		{name: "modes kept, nested paths with slashes", files: map[string]os.FileMode{"bootstrap": 0o755, "etc/config.json": 0o644, "bin/helper": 0o750},
			want: map[string]os.FileMode{"bootstrap": 0o755, "etc/config.json": 0o644, "bin/helper": 0o750}},
		{name: "bootstrap not executable", files: map[string]os.FileMode{"bootstrap": 0o644}, errHas: "want an executable file"},
		{name: "no bootstrap", files: map[string]os.FileMode{"main": 0o755}, errHas: "bootstrap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, tc.files)
			b, err := FunctionZip(dir)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one with %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := unzip(t, b)
			if len(got) != len(tc.want) {
				t.Fatalf("entries %v, want %v", got, tc.want)
			}
			for name, mode := range tc.want {
				e, ok := got[name]
				if !ok {
					t.Fatalf("no entry %s", name)
				}
				if e.mode.Perm() != mode || !e.mode.IsRegular() {
					t.Errorf("%s: mode %v, want %v", name, e.mode, mode)
				}
				if string(e.data) != "content of "+name {
					t.Errorf("%s: content %q", name, e.data)
				}
			}
			again, err := FunctionZip(dir)
			if err != nil || !bytes.Equal(again, b) {
				t.Errorf("a second package of the same files differs (%v)", err)
			}
		})
	}
}

func TestCodeAsset(t *testing.T) {
	tmpl, err := LoadTemplate("testdata/cdkout")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := tmpl.CodeAsset("FunctionsStepE9F5EEDF")
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join("testdata", "cdkout", "asset.c0de") {
		t.Errorf("asset %s", dir)
	}
	b, err := FunctionZip(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := unzip(t, b)["bootstrap"]; e.mode.Perm() != 0o755 || !strings.HasPrefix(string(e.data), "#!/bin/sh") {
		t.Errorf("bootstrap of the fixture asset: %v %q", e.mode, e.data)
	}
	if a := tmpl.Architecture("FunctionsStepE9F5EEDF"); a != "arm64" {
		t.Errorf("architecture %s, want the template's arm64", a)
	}
	tmpl.Resources["X"] = Resource{Type: "AWS::Lambda::Function", Properties: map[string]any{"Code": map[string]any{"ZipFile": "inline"}}}
	if _, err := tmpl.CodeAsset("X"); err == nil {
		t.Error("inline code taken for an asset")
	}
	if a := tmpl.Architecture("X"); a != "x86_64" {
		t.Errorf("architecture %s, want Lambda's default x86_64", a)
	}
}

func TestArchitectures(t *testing.T) {
	for _, tc := range []struct{ machine, lambda, goarch string }{
		{"x86_64", "x86_64", "amd64"}, {"amd64", "x86_64", "amd64"},
		{"aarch64", "arm64", "arm64"}, {"arm64", "arm64", "arm64"},
		{"s390x", "", ""},
	} {
		la, err := LambdaArch(tc.machine)
		if (err != nil) != (tc.lambda == "") || la != tc.lambda {
			t.Errorf("LambdaArch(%s) = %q, %v; want %q", tc.machine, la, err, tc.lambda)
		}
		if tc.lambda == "" {
			continue
		}
		if ga, err := GoArch(la); err != nil || ga != tc.goarch {
			t.Errorf("GoArch(%s) = %q, %v; want %q", la, ga, err, tc.goarch)
		}
	}
}

// TestCDKBuildTags: the tags a LocalStack rebuild uses are infra/cdk's.
func TestCDKBuildTags(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "infra", "cdk", "app.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`BaseBuildTags\s*=\s*"([^"]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no BaseBuildTags in infra/cdk/app.go")
	}
	if string(m[1]) != CDKBuildTags {
		t.Fatalf("infra/cdk BaseBuildTags %q, CDKBuildTags %q", m[1], CDKBuildTags)
	}
	// The role's tags: the two functions have the same body.
	body := func(src []byte, name string) string {
		m := regexp.MustCompile(`(?s)func ` + name + `\(role string\) string \{\n(.*?)\n\}\n`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("no func %s(role string) string", name)
		}
		return string(m[1])
	}
	own, err := os.ReadFile("package.go")
	if err != nil {
		t.Fatal(err)
	}
	if cdk, here := body(src, "RoleTags"), body(own, "roleTags"); cdk != here {
		t.Fatalf("infra/cdk RoleTags:\n%s\nroleTags here:\n%s", cdk, here)
	}
}

// TestBootstrapCommand: the rebuild for an engine of another
// architecture is the CDK app's build (infra/cdk buildArgs) but for
// GOARCH.
func TestBootstrapCommand(t *testing.T) {
	for _, tc := range []struct{ arch, goarch string }{{"x86_64", "amd64"}, {"arm64", "arm64"}} {
		cmd, err := BootstrapBuild(context.Background(), "/src", tc.arch, "step", "/out/bootstrap")
		if err != nil {
			t.Fatal(err)
		}
		want := "go build -trimpath -buildvcs=false -tags " + CDKBuildTags + ",keel_role_step,keel_env_aws -ldflags -s -w -o /out/bootstrap ./cmd/keel"
		if got := strings.Join(cmd.Args, " "); got != want || cmd.Dir != "/src" {
			t.Errorf("%s: %q in %s, want %q", tc.arch, got, cmd.Dir, want)
		}
		env := strings.Join(cmd.Env, "\n")
		for _, v := range []string{"GOOS=linux", "GOARCH=" + tc.goarch, "CGO_ENABLED=0"} {
			if !strings.Contains(env, "\n"+v) {
				t.Errorf("%s: environment lacks %s", tc.arch, v)
			}
		}
	}
	if _, err := BootstrapBuild(context.Background(), "/src", "mips", "step", "/out/bootstrap"); err == nil {
		t.Error("built for an unknown architecture")
	}
}

// checkBootstrap reads a package back: one executable bootstrap, a
// static linux ELF for machine whose build info shows the CDK's tags and
// no cgo.
func checkBootstrap(t *testing.T, pkg []byte, goarch, role string, machine elf.Machine) {
	t.Helper()
	files := unzip(t, pkg)
	boot, ok := files["bootstrap"]
	if len(files) != 1 || !ok {
		t.Fatalf("package entries %d, want the bootstrap alone", len(files))
	}
	if boot.mode.Perm() != 0o755 {
		t.Errorf("bootstrap mode %v, want 0755", boot.mode)
	}
	f, err := elf.NewFile(bytes.NewReader(boot.data))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != machine || f.Type != elf.ET_EXEC {
		t.Errorf("ELF machine %v type %v, want %v ET_EXEC", f.Machine, f.Type, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("bootstrap is dynamically linked")
		}
	}
	info, err := buildinfo.Read(bytes.NewReader(boot.data))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": "linux", "GOARCH": goarch, "CGO_ENABLED": "0", "-tags": RoleBuildTags(role), "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("build setting %s = %q, want %q", k, settings[k], want)
		}
	}
	if info.Path != "github.com/keelrun/keel/cmd/keel" {
		t.Errorf("main package %s", info.Path)
	}
}

// TestBootstrapRebuild builds ./cmd/keel as the LocalStack target
// rebuilds it for an engine of another architecture than the template's,
// packs it and reads it back. A linux build of ./cmd/keel costs minutes
// of CPU on a loaded machine, so it runs in make localstack-e2e (where a
// rebuild is what happens) or with KEEL_AWSLOCAL_REBUILD=1, not in make
// test. ARCH (default x86_64, what an amd64 engine gets) picks the
// architecture.
func TestBootstrapRebuild(t *testing.T) {
	if os.Getenv("KEEL_AWSLOCAL_REBUILD") == "" && os.Getenv(EnvE2ELocalStack) == "" {
		t.Skip("SKIPPED: set KEEL_AWSLOCAL_REBUILD=1 (make localstack-e2e runs it)")
	}
	arch := envOr("KEEL_AWSLOCAL_REBUILD_ARCH", "x86_64")
	goarch, err := GoArch(arch)
	if err != nil {
		t.Fatal(err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
	dir := t.TempDir()
	if err := BuildBootstrap(context.Background(), repoRoot(t), arch, "api", dir); err != nil {
		t.Fatal(err)
	}
	b, err := FunctionZip(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkBootstrap(t, b, goarch, "api", machine)
	fmt.Printf("lambda packages: ./cmd/keel rebuilt for %s: %.1f MB zipped\n", arch, float64(len(b))/1e6)
}

// TestLambdaPackages packs the template's own code asset as the
// LocalStack target uploads it for an engine of the template's
// architecture and reads it back as Lambda runs it. It runs in make
// aws-local-e2e, after the synth.
func TestLambdaPackages(t *testing.T) {
	if os.Getenv("KEEL_AWSLOCAL") == "" {
		t.Skip("SKIPPED: set KEEL_AWSLOCAL=1 (make aws-local-e2e runs it after make synth)")
	}
	t.Parallel()
	tmpl, err := LoadTemplate(filepath.Join(repoRoot(t), "infra", "cdk", "cdk.out"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range tmpl.ids("AWS::Lambda::Function") {
		asset, err := tmpl.CodeAsset(id)
		if err != nil {
			t.Fatal(err)
		}
		if seen[asset] { // one asset per role; identical ones are shared
			continue
		}
		seen[asset] = true
		b, err := FunctionZip(asset)
		if err != nil {
			t.Fatal(err)
		}
		checkBootstrap(t, b, "arm64", tmpl.Role(id), elf.EM_AARCH64)
		fmt.Printf("lambda packages: %s: the code asset %s, %.1f MB zipped\n", id, filepath.Base(asset), float64(len(b))/1e6)
	}
}
