package cli

import (
	"bufio"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/testbin"
)

// keelInit runs `keel init args...` in-process.
func keelInit(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	c := &cli{stdin: bufio.NewReader(strings.NewReader("")), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = execute(context.Background(), append([]string{"init"}, args...), c)
	return code, out.String(), errb.String()
}

// repoRoot is the directory of Keel's go.mod, found upwards from the
// test's working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			m := moduleOf(f)
			f.Close()
			if m == keelModule {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s above the working directory", keelModule)
		}
		dir = parent
	}
}

// TestInitBuildsAndPasses generates a module against this checkout and
// runs what its README tells the user to: go mod tidy, go vet, go test.
func TestInitBuildsAndPasses(t *testing.T) {
	testbin.SkipShort(t, "go mod tidy, go vet and go test of a generated module")
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "shop-agent")
	code, out, errOut := keelInit(t, "--module", "example.com/shop-agent", "--replace", root, dir)
	if code != exitOK {
		t.Fatalf("keel init: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "go mod tidy && go test ./... && go run . dev") || errOut != "" {
		t.Errorf("keel init printed\n%s\nand on stderr\n%s\nwant the next steps and no warning", out, errOut)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "replace " + keelModule + " => " + goModQuote(root); !strings.Contains(string(gomod), want) {
		t.Fatalf("go.mod:\n%s\nwant %q", gomod, want)
	}

	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	env := append(os.Environ(), "GOFLAGS="+strings.Join(append(flags, "-mod=mod"), " "), "GOWORK=off")
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"test", "-count=1", "./..."}} {
		start := time.Now()
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir, cmd.Env = dir, env
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the generated module: %v\n%s", strings.Join(args, " "), err, b)
		}
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	}
}

// TestInitRefuses checks the bad command lines: each is a usage error
// (exit 2) naming what is wrong, and writes nothing.
func TestInitRefuses(t *testing.T) {
	tmp := t.TempDir()
	full := filepath.Join(tmp, "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(tmp, "fresh")
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{name: "no DIR", args: nil, want: []string{"missing argument DIR", "usage: keel init"}},
		{name: "two DIRs", args: []string{fresh, "other"}, want: []string{`unexpected argument "other"`}},
		{name: "DIR not empty", args: []string{full}, want: []string{full, "not empty"}},
		{name: "DIR is a file", args: []string{file}, want: []string{file, "not a directory"}},
		{name: "module with a space", args: []string{"--module", "my agent", fresh}, want: []string{"--module", `"my agent"`}},
		{name: "module with an empty element", args: []string{"--module", "example.com//agent", fresh}, want: []string{"--module"}},
		{name: "DIR's name is no module path", args: []string{filepath.Join(tmp, "my agent")}, want: []string{"--module", "base name of DIR"}},
		{name: "replace is no Keel checkout", args: []string{"--replace", tmp, fresh}, want: []string{"--replace", "Keel checkout"}},
		{name: "unknown flag", args: []string{"--modul", "x", fresh}, want: []string{"-modul"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := keelInit(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not contain %q", errOut, w)
				}
			}
			entries, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{"file", "full"}) {
				t.Errorf("the temp dir holds %v, want only file and full", names)
			}
			if got, _ := os.ReadDir(full); len(got) != 1 {
				t.Errorf("%s holds %d files, want its one", full, len(got))
			}
		})
	}
}

// TestInitGoFilesAreFormatted generates a module from this development
// build without --replace: the require names the zero version, a warning
// says a replace is needed, and every Go file is gofmt-clean.
func TestInitGoFilesAreFormatted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	code, out, errOut := keelInit(t, dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "--replace PATH_TO_KEEL_CHECKOUT") {
		t.Errorf("stderr %q: want the warning naming --replace PATH_TO_KEEL_CHECKOUT", errOut)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "module shop\n\ngo 1.26.0\n\nrequire " + keelModule + " " + develVersion + "\n"; string(gomod) != want {
		t.Errorf("go.mod:\n%s\nwant\n%s", gomod, want)
	}
	var gofiles []string
	err = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".go") {
			gofiles = append(gofiles, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"main.go", "agent.go", "agent_test.go"} {
		if !slices.Contains(gofiles, filepath.Join(dir, want)) {
			t.Errorf("no %s among %v", want, gofiles)
		}
	}
	for _, p := range gofiles {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		formatted, err := format.Source(b)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		} else if string(formatted) != string(b) {
			t.Errorf("%s is not gofmt-clean", filepath.Base(p))
		}
	}
}

// TestInitGoMod renders go.mod for each kind of build.
func TestInitGoMod(t *testing.T) {
	tests := []struct {
		name string
		data initData
		want string
	}{
		{name: "released", data: initData{Module: "example.com/a", Version: "v1.2.3"},
			want: "module example.com/a\n\ngo 1.26.0\n\nrequire github.com/keelrun/keel v1.2.3\n"},
		{name: "development build with a checkout", data: initData{Module: "a", Version: develVersion, Replace: "/src/keel"},
			want: "module a\n\ngo 1.26.0\n\nrequire github.com/keelrun/keel " + develVersion + "\n\nreplace github.com/keelrun/keel => /src/keel\n"},
		{name: "checkout path with a space", data: initData{Module: "a", Version: develVersion, Replace: goModQuote("/my src/keel")},
			want: "module a\n\ngo 1.26.0\n\nrequire github.com/keelrun/keel " + develVersion + "\n\nreplace github.com/keelrun/keel => \"/my src/keel\"\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files, err := renderTemplates(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(files["go.mod"]); got != tc.want {
				t.Errorf("go.mod:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestKeelVersion picks the version to require from the build info.
func TestKeelVersion(t *testing.T) {
	dep := func(v string, replaced bool) *debug.BuildInfo {
		d := &debug.Module{Path: keelModule, Version: v}
		if replaced {
			d.Replace = &debug.Module{Path: "../keel"}
		}
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"}, Deps: []*debug.Module{d}}
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{name: "cmd/keel at a release", bi: &debug.BuildInfo{Main: debug.Module{Path: keelModule, Version: "v0.3.0"}}, ok: true, want: "v0.3.0"},
		{name: "cmd/keel from a checkout", bi: &debug.BuildInfo{Main: debug.Module{Path: keelModule, Version: "(devel)"}}, ok: true, want: ""},
		{name: "cmd/keel from a dirty tree", bi: &debug.BuildInfo{Main: debug.Module{Path: keelModule, Version: "v0.3.1-0.20260101000000-abcdefabcdef+dirty"}}, ok: true, want: ""},
		{name: "a program requiring a release", bi: dep("v0.3.0", false), ok: true, want: "v0.3.0"},
		{name: "a program on a replaced Keel", bi: dep(develVersion, true), ok: true, want: ""},
		{name: "a program without Keel", bi: &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, ok: true, want: ""},
		{name: "no build info", ok: false, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := keelVersion(tc.bi, tc.ok); got != tc.want {
				t.Errorf("keelVersion = %q, want %q", got, tc.want)
			}
		})
	}
}
