package stepfunctions_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/stepfunctions"
)

// TestStateMachineDoc holds docs/state-machine.md to the code: every
// decision routes where its table says, and every status moves where its
// table says, no more and no less.
func TestStateMachineDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/state-machine.md")
	if err != nil {
		t.Fatal(err)
	}
	decisions := table(t, string(doc), "## Decisions")
	statuses := table(t, string(doc), "## Statuses")
	routes := routeOf(t)

	all := []harness.Next{harness.NextContinue, harness.NextApproval, harness.NextWait, harness.NextSpill,
		harness.NextDone, harness.NextFailed, harness.NextCancelled, harness.NextNeedsHuman}
	if len(decisions) != len(all) {
		t.Errorf("the decisions table has %d rows, the harness %d decisions", len(decisions), len(all))
	}
	for _, n := range all {
		row, ok := decisions[string(n)]
		if !ok {
			t.Errorf("decision %q is not in the table", n)
			continue
		}
		if got := routes[string(n)]; got != row[0] {
			t.Errorf("decision %q: run.asl.json routes it to %q, the doc says %q", n, got, row[0])
		}
		if st := row[1]; st != "unchanged" && !run.Status(st).Valid() {
			t.Errorf("decision %q: status %q is not a run status", n, st)
		}
	}
	for to := range routes {
		if _, ok := decisions[to]; !ok {
			t.Errorf("run.asl.json routes %q, which the doc does not list", to)
		}
	}

	if len(statuses) != len(run.Statuses()) {
		t.Errorf("the statuses table has %d rows, package run %d statuses", len(statuses), len(run.Statuses()))
	}
	for _, from := range run.Statuses() {
		row, ok := statuses[string(from)]
		if !ok {
			t.Errorf("status %q is not in the table", from)
			continue
		}
		var listed []string
		for _, s := range strings.Split(row[0], ",") {
			if s = strings.TrimSpace(s); s != "" {
				listed = append(listed, s)
			}
		}
		var want []string
		for _, to := range run.Statuses() {
			if to != from && from.CanTransition(to) {
				want = append(want, string(to))
			}
		}
		slices.Sort(listed)
		slices.Sort(want)
		if !slices.Equal(listed, want) {
			t.Errorf("status %q: the doc lists %v, the code allows %v", from, listed, want)
		}
		if final := row[1] == "yes"; final != from.Terminal() {
			t.Errorf("status %q: the doc says final=%s, Terminal() is %t", from, row[1], from.Terminal())
		}
	}
}

// table reads the Markdown table after heading: first cell → the others.
func table(t *testing.T, doc, heading string) map[string][]string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("no %q in the doc", heading)
	}
	rows := map[string][]string{}
	started := false
	for _, line := range strings.Split(doc[i:], "\n")[1:] {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if strings.HasPrefix(cells[0], "---") || cells[0] == "Next" || cells[0] == "Status" {
			continue
		}
		rows[cells[0]] = cells[1:]
	}
	return rows
}

// routeOf reads the Route state: the state each step.next value goes to.
func routeOf(t *testing.T) map[string]string {
	t.Helper()
	var def struct {
		States map[string]struct {
			Choices []json.RawMessage
		}
	}
	if err := json.Unmarshal(stepfunctions.Definition, &def); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(rule json.RawMessage, next string)
	walk = func(rule json.RawMessage, next string) {
		var r struct {
			Variable, StringEquals string
			Or, And                []json.RawMessage
		}
		if err := json.Unmarshal(rule, &r); err != nil {
			t.Fatal(err)
		}
		if r.Variable == "$.step.next" && r.StringEquals != "" {
			out[r.StringEquals] = next
		}
		for _, sub := range append(r.Or, r.And...) {
			walk(sub, next)
		}
	}
	for _, c := range def.States["Route"].Choices {
		var n struct{ Next string }
		if err := json.Unmarshal(c, &n); err != nil {
			t.Fatal(err)
		}
		walk(c, n.Next)
	}
	return out
}
