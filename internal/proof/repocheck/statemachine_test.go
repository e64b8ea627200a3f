package repocheck

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestStateMachineDocNames keeps the tables of docs/state-machine.md
// complete: the decisions table lists every harness Next value, the
// statuses table every run Status, the states table every state of
// stepfunctions/run.asl.json, and no cell of them names one that is gone.
// It reads the sources (go/parser, the JSON) rather than importing the
// packages, so a constant added without its row fails here even when no
// code uses it yet. (stepfunctions/statemachine_test.go checks what the
// rows say; this checks that the rows are all there.)
func TestStateMachineDocNames(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/state-machine.md")
	if err != nil {
		t.Fatal(err)
	}
	nexts := stringConsts(t, "../../../internal/kernel/harness/decision.go", "Next")
	statuses := stringConsts(t, "../../../internal/kernel/run/status.go", "Status")
	states := aslStates(t, "../../../stepfunctions/run.asl.json")

	decisionRows := docTable(t, string(doc), "## Decisions")
	statusRows := docTable(t, string(doc), "## Statuses")
	stateRows := docTable(t, string(doc), "## States")

	sameSet(t, "the decisions table", "harness Next constants (internal/kernel/harness/decision.go)", column(decisionRows, 0), nexts)
	sameSet(t, "the statuses table", "run Status constants (internal/kernel/run/status.go)", column(statusRows, 0), statuses)
	sameSet(t, "the states table", "states of stepfunctions/run.asl.json", column(stateRows, 0), states)

	// The cells that link the tables name only what exists.
	for _, r := range decisionRows {
		mustName(t, "decisions table, "+r[0]+", Route goes to", words(r[1]), states)
		mustName(t, "decisions table, "+r[0]+", Status after the Step", list(r[2]), append([]string{"unchanged"}, statuses...))
	}
	for _, r := range statusRows {
		mustName(t, "statuses table, "+r[0]+", May move to", list(r[1]), statuses)
	}
	for _, r := range stateRows {
		if len(r) < 5 {
			t.Errorf("states table, %s: %d cells, want State | Type | Reached from | Decisions | Run status | …", r[0], len(r))
			continue
		}
		mustName(t, "states table, "+r[0]+", Reached from", words(r[2]), states)
		mustName(t, "states table, "+r[0]+", Decisions", list(r[3]), nexts)
		mustName(t, "states table, "+r[0]+", Run status", list(r[4]), append([]string{"unchanged"}, statuses...))
	}
}

// stringConsts returns the string values of the constants of type typ
// declared in the Go file at path.
func stringConsts(t *testing.T, path, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for _, e := range v.Values {
				lit, ok := e.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a %s constant is not a string literal; read it another way", path, typ)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no constant of type %s (renamed? moved?)", path, typ)
	}
	return out
}

// aslStates returns the names of the top-level states of the ASL file.
func aslStates(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		States map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatal(err)
	}
	var out []string
	for name := range def.States {
		out = append(out, name)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no States", path)
	}
	slices.Sort(out) // map order: sorted, so a failure's message is stable
	return out
}

// docTable returns the body rows of the first Markdown table after
// heading, each as its trimmed cells (the header and rule rows dropped).
func docTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/state-machine.md has no %q section", heading)
	}
	var rows [][]string
	seen := 0
	for _, line := range strings.Split(doc[i+1:], "\n")[1:] {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			break // the next section: the table ended or never started
		}
		if !strings.HasPrefix(line, "|") {
			if seen > 0 {
				break
			}
			continue
		}
		seen++
		if seen <= 2 {
			continue // the header and the --- rule
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("docs/state-machine.md: no table under %q", heading)
	}
	return rows
}

func column(rows [][]string, i int) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r[i])
	}
	return out
}

// list splits a cell of comma-separated names; an empty cell is none.
func list(cell string) []string {
	var out []string
	for _, s := range strings.Split(cell, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// stateWord is how a state name looks in a cell that mixes names and
// prose ("RunOnFargate (lost task)", "the execution's start").
var stateWord = regexp.MustCompile(`\b[A-Z][a-z]+(?:[A-Z][a-z]+)*\b`)

func words(cell string) []string { return stateWord.FindAllString(cell, -1) }

func sameSet(t *testing.T, table, what string, doc, code []string) {
	t.Helper()
	for _, c := range code {
		if !slices.Contains(doc, c) {
			t.Errorf("docs/state-machine.md: %s misses %q, one of the %s", table, c, what)
		}
	}
	for _, d := range doc {
		if !slices.Contains(code, d) {
			t.Errorf("docs/state-machine.md: %s names %q, which is not one of the %s (any more)", table, d, what)
		}
	}
}

func mustName(t *testing.T, where string, names, known []string) {
	t.Helper()
	for _, n := range names {
		if !slices.Contains(known, n) {
			t.Errorf("docs/state-machine.md: %s names %q, which no longer exists (known: %s)", where, n, strings.Join(known, ", "))
		}
	}
}
