package repocheck

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutGroups are the folders whose packages belong to one group of
// docs/concepts.md's Layout: a package under dir is named under a "### "
// heading that starts with group. A package elsewhere under internal/
// (api, compose, sandbox, ...) sits under whichever group says what it is
// for.
var layoutGroups = []struct{ dir, group string }{
	{"internal/kernel/", "Kernel"},
	{"internal/backend/", "Backends"},
	{"internal/aws/", "AWS"},
	{"internal/local/", "Local"},
	{"internal/observe/", "Observe"},
	{"internal/proof/", "Proof"},
	{"internal/cmd/", "Commands"},
}

// rootGroup is the Layout's group of what lies outside internal/.
const rootGroup = "The module root"

// TestLayoutNamesEveryPackage: the Layout section of docs/concepts.md
// names every package directory under internal/ (testdata aside), each
// under the group its folder belongs to, and names no internal/ folder
// that is gone — so a newcomer's map is the tree.
func TestLayoutNamesEveryPackage(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := packageDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 40 {
		t.Fatalf("found %d packages under internal/: not this repository", len(pkgs))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "concepts.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range layoutProblems(string(doc), pkgs) {
		t.Error("docs/concepts.md, Layout: " + msg)
	}
}

// TestLayoutProblems holds the Layout's reader to its rules on a small
// page.
func TestLayoutProblems(t *testing.T) {
	pkgs := map[string]bool{"internal/kernel/run": true, "internal/kernel/store": true,
		"internal/kernel/store/storetest": true, "internal/api": true}
	page := func(body string) string {
		return "# t\n\n## Layout\n\n### The module root\n\n```\ncmd/keel/  x\n```\n\n" + body + "\n## Next\n\ninternal/gone/\n"
	}
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{name: "all named, sub-package on its parent's line", doc: page("### Kernel: k\n\n```\ninternal/kernel/run/  records\ninternal/kernel/store/  ports; storetest/ the suite\n```\n### Runtime\n```\ninternal/api/  the API\n```\n")},
		{name: "a package missing", doc: page("### Kernel\n```\ninternal/kernel/run/\ninternal/kernel/store/  storetest/\n```\n"),
			want: []string{"internal/api is not named"}},
		{name: "in the wrong group", doc: page("### Kernel\n```\ninternal/kernel/run/\ninternal/api/\n```\n### Runtime\n```\ninternal/kernel/store/  storetest/\n```\n"),
			want: []string{"internal/kernel/store is under \"Runtime\", want Kernel", "internal/kernel/store/storetest is under \"Runtime\", want Kernel"}},
		{name: "a folder that is gone", doc: page("### Kernel\n```\ninternal/kernel/run/\ninternal/kernel/store/  storetest/\ninternal/kernel/old/\n```\n### Runtime\n```\ninternal/api/\n```\n"),
			want: []string{"names internal/kernel/old/, which is no package"}},
		{name: "outside any group", doc: page("```\ninternal/api/\n```\n### Kernel\n```\ninternal/kernel/run/\ninternal/kernel/store/  storetest/\n```\n"),
			want: []string{"internal/api is under \"The module root\", not a group of internal/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := layoutProblems(tc.doc, pkgs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// packageDirs lists the directories under root/internal that hold Go
// files, as "internal/x/y", leaving out testdata, node_modules and hidden
// folders.
func packageDirs(root string) (map[string]bool, error) {
	pkgs := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			pkgs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return pkgs, err
}

// relName is a folder named relative to the line's own: "storetest/",
// "e2e/wsagent/".
var relName = regexp.MustCompile(`(?:^|[\s,;(])([a-z0-9_]+(?:/[a-z0-9_]+)*)/`)

// layoutProblems reads the Layout section of doc (up to the next "## "
// heading): "### " headings are its groups; a line that starts with an
// internal/ folder names that package, and the folders it names after it
// relative to that one ("storetest/") name the sub-packages among pkgs.
// It returns what breaks the rules, sorted by package.
func layoutProblems(doc string, pkgs map[string]bool) []string {
	_, section, _ := strings.Cut(doc, "\n## Layout\n")
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var problems []string
	group := rootGroup
	named := map[string]string{} // package -> its group
	for _, line := range strings.Split(section, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			group = h
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "internal/") {
			continue
		}
		lead := strings.TrimSuffix(fields[0], "/")
		if !pkgs[lead] {
			problems = append(problems, "names "+fields[0]+", which is no package")
			continue
		}
		named[lead] = group
		for _, m := range relName.FindAllStringSubmatch(strings.TrimPrefix(line, fields[0]), -1) {
			if sub := lead + "/" + m[1]; pkgs[sub] {
				named[sub] = group
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		g, ok := named[pkg]
		switch want := groupOf(pkg); {
		case !ok:
			problems = append(problems, pkg+" is not named")
		case g == rootGroup:
			problems = append(problems, pkg+" is under \""+g+"\", not a group of internal/")
		case want != "" && !strings.HasPrefix(g, want):
			problems = append(problems, pkg+" is under \""+g+"\", want "+want)
		}
	}
	return problems
}

// groupOf is the group pkg's folder belongs to, "" when any will do.
func groupOf(pkg string) string {
	for _, g := range layoutGroups {
		if strings.HasPrefix(pkg+"/", g.dir) {
			return g.group
		}
	}
	return ""
}
