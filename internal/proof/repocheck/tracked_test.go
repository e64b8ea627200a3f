// Package repocheck holds checks on the repository itself, not on code.
package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoTrackedBinaries: scripts/check-tracked.sh passes on this checkout
// and fails on a repository that tracks a compiled executable or a file
// over 5 MB, naming it.
func TestNoTrackedBinaries(t *testing.T) {
	script, err := filepath.Abs("../../../scripts/check-tracked.sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	if out, err := exec.Command("bash", script, "../../..").CombinedOutput(); err != nil {
		t.Fatalf("this checkout: %v\n%s", err, out)
	}
	self, err := os.Executable() // the test binary: an ELF file
	if err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"an executable", elf[:4096], "compiled executable"},
		{"a large file", make([]byte, 5<<20+1), "over 5 MB"},
		{"a small text file", []byte("hello\n"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) {
				cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git("init", "-q")
			if err := os.WriteFile(filepath.Join(dir, "thing"), tc.data, 0o755); err != nil {
				t.Fatal(err)
			}
			git("add", "thing")
			out, err := exec.Command("bash", script, dir).CombinedOutput()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused a text file: %v\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "thing") {
				t.Fatalf("err %v, output %q: want a failure naming thing and %q", err, out, tc.want)
			}
		})
	}
}
