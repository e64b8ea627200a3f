package repocheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	maxFileLines = 400
	maxFuncLines = 80
)

// sizeAllowed names the files over maxFileLines and the functions over
// maxFuncLines that stay, each with the reason it stays. A key is a file
// ("internal/x/y.go") or a function ("internal/x/y.go:Name" or
// "internal/x/y.go:Type.Name"), relative to the repository root. An entry
// that no longer needs its place fails the test, so the list only shrinks.
var sizeAllowed = map[string]string{
	"internal/cli/crashtest.go:crashtestCommand":                 "flag declarations of `keel crashtest`, one per line",
	"internal/cli/dev_server.go:devCommand":                      "flag declarations of `keel dev`, one per line",
	"internal/proof/crash/check.go:checkPublications":            "one invariant of the destination's log checked top to bottom; split, it would read as several",
	"internal/proof/crash/drive.go:node.drive":                   "the crash driver's one loop over a keel dev process's life (start, wait, kill, restart)",
	"internal/proof/crash/matrix.go:Matrix":                      "the matrix is a list of cases, one per line",
	"internal/proof/crash/scenario.go:Play":                      "one scenario's script, played step by step in order",
	"internal/aws/states/intrinsic.go:intrinsic.eval":            "one switch over the ASL intrinsic functions, one case each",
	"internal/kernel/store/storetest/badinput.go:testBadInput":   "a conformance table of bad inputs, one line each",
	"internal/kernel/store/storetest/commit.go:testCommitStep":   "a conformance scenario: one sequence of store calls read top to bottom",
	"internal/kernel/store/storetest/outbox.go:testOutbox":       "a conformance scenario: one sequence of store calls read top to bottom",
	"internal/kernel/store/storetest/approvals.go:testApprovals": "a conformance scenario: one sequence of store calls read top to bottom",
	"internal/kernel/store/storetest/budget.go:testBudget":       "a conformance scenario: one sequence of store calls read top to bottom",
	"internal/kernel/store/storetest/records.go:testOperations":  "a conformance scenario: one sequence of store calls read top to bottom",
	"internal/kernel/store/storetest/runs.go:testListRuns":       "a conformance scenario: one sequence of store calls read top to bottom",
	"internal/kernel/store/storetest/settled.go:testSettle":      "a conformance scenario: one sequence of store calls read top to bottom",
}

// TestSizeLimits: no Go file outside tests and generated code is over
// maxFileLines lines and no function in one is over maxFuncLines lines,
// in the main module and in infra/cdk, except the entries of sizeAllowed.
func TestSizeLimits(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	found, err := sizeOffenders(root)
	if err != nil {
		t.Fatal(err)
	}
	for key, what := range found {
		if _, ok := sizeAllowed[key]; !ok {
			t.Errorf("%s: %s; split it by job, or add it to sizeAllowed with the reason it stays", key, what)
		}
	}
	for key := range sizeAllowed {
		if _, ok := found[key]; !ok {
			t.Errorf("sizeAllowed names %s, which is within the limits now (or gone): remove the entry", key)
		}
	}
}

// sizeOffenders returns the files and functions over the limits under
// root, keyed as in sizeAllowed, with what is over.
func sizeOffenders(root string) (map[string]string, error) {
	found := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "cdk.out" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		file, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(file) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
			found[rel] = fmt.Sprintf("%d lines (limit %d)", n, maxFileLines)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				found[rel+":"+funcName(fn)] = fmt.Sprintf("function of %d lines (limit %d)", n, maxFuncLines)
			}
		}
		return nil
	})
	return found, err
}

// funcName is "Name" for a function and "Type.Name" for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}
