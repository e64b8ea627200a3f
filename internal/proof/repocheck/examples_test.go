package repocheck

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/testbin"
)

const module = "github.com/keelrun/keel/"

// importViolations reads `go list` lines of "package|import import ..."
// (a package's own, test and external-test imports) and names each import
// that crosses the line between Keel and its examples: outside examples/,
// no package imports an example (the crash suite and Keel's tests run
// internal/fixture, so an example can change for readers); under
// examples/, no package imports internal/ (an example is written as a
// user's program would be, on package keel and keeltest only). The
// examples that are modules of their own are held by the compiler.
func importViolations(lines []string) []string {
	var bad []string
	for _, line := range lines {
		pkg, imports, ok := strings.Cut(line, "|")
		if !ok {
			continue
		}
		inExample := strings.HasPrefix(pkg, module+"examples/")
		for _, imp := range strings.Fields(imports) {
			switch {
			case !inExample && strings.HasPrefix(imp, module+"examples/"):
				bad = append(bad, pkg+" imports the example "+imp)
			case inExample && strings.HasPrefix(imp, module+"internal/"):
				bad = append(bad, "the example "+pkg+" imports "+imp)
			}
		}
	}
	return bad
}

func TestImportViolations(t *testing.T) {
	tests := []struct {
		name string
		line string
		bad  bool
	}{
		{name: "internal on the fixture", line: module + "internal/proof/crash|" + module + "internal/fixture fmt"},
		{name: "example on the public API", line: module + "examples/research|" + module[:len(module)-1] + " " + module + "keeltest"},
		{name: "example on its own package", line: module + "examples/research|" + module + "examples/research/agent"},
		{name: "internal on an example", line: module + "internal/proof/crash|" + module + "examples/research", bad: true},
		{name: "command on an example", line: module + "cmd/keel|fmt " + module + "examples/research/agent", bad: true},
		{name: "example on internal", line: module + "examples/research/agent|" + module + "internal/kernel/run", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := importViolations([]string{tc.line}); (len(got) > 0) != tc.bad {
				t.Fatalf("violations %v, want any: %v", got, tc.bad)
			}
		})
	}
}

// TestExamplesAreNotLoadBearing holds importViolations on this module.
func TestExamplesAreNotLoadBearing(t *testing.T) {
	testbin.SkipShort(t, "go list of the whole module")
	cmd := exec.Command("go", "list", "-e", "-f",
		`{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 50 {
		t.Fatalf("go list named %d packages: not this module", len(lines))
	}
	for _, v := range importViolations(lines) {
		t.Error(v)
	}
}
