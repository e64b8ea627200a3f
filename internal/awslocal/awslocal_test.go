package awslocal

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

var scenarios = []scenario{approveScenario, denyScenario, cancelScenario, killScenario, rolloverScenario, scheduleScenario}

// TestAWSLocal plays every scenario on moto's interpreter and on Keel's
// executor, each on a stack of its own, prints the states each execution
// entered, and requires the two interpreters to agree (Comparable).
func TestAWSLocal(t *testing.T) {
	w := newWorld(t)
	results := map[Interpreter]map[string]outcome{MotoEngine: {}, KeelExecutor: {}}
	var table []string
	for _, sc := range scenarios {
		for _, in := range []Interpreter{MotoEngine, KeelExecutor} {
			name := sc.name + "-" + string(in)
			t.Run(name, func(t *testing.T) {
				dest := newDestination(t, t.TempDir())
				opts := sc.opts(dest)
				opts.Name, opts.Interpreter = name, in
				start := time.Now()
				s, err := w.Deploy(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				out := sc.play(t, s, dest)
				results[in][sc.name] = out
				for i, e := range out.Executions {
					line := fmt.Sprintf("%-14s %-4s g%d %s", sc.name, in, i, out.Traces[e])
					table = append(table, line)
					fmt.Println(line)
				}
				fmt.Printf("%-14s %-4s took %s\n", sc.name, in, time.Since(start).Round(time.Millisecond))
			})
		}
	}
	t.Run("differential", func(t *testing.T) {
		agree := 0
		for _, sc := range scenarios {
			m, k := results[MotoEngine][sc.name], results[KeelExecutor][sc.name]
			if m.Traces == nil || k.Traces == nil {
				t.Errorf("%s: not played on both interpreters", sc.name)
				continue
			}
			if len(m.Executions) != len(k.Executions) && sc.name != rolloverScenario.name {
				t.Errorf("%s: %d executions on moto, %d on Keel's executor", sc.name, len(m.Executions), len(k.Executions))
				continue
			}
			// Executions are named by run id, which differs per stack:
			// compare them by position.
			a, b := map[string]Trace{}, map[string]Trace{}
			var names []string
			for i := range min(len(m.Executions), len(k.Executions)) {
				n := fmt.Sprintf("%s g%d", sc.name, i)
				a[n], b[n] = m.Traces[m.Executions[i]], k.Traces[k.Executions[i]]
				names = append(names, n)
			}
			if sc.name == rolloverScenario.name {
				// How many generations a run takes depends on how many
				// budget-bound steps it needed; both must end the same.
				last := fmt.Sprintf("%s last", sc.name)
				a[last], b[last] = m.Traces[m.Executions[len(m.Executions)-1]], k.Traces[k.Executions[len(k.Executions)-1]]
				names = []string{names[0], last}
			}
			if d := Diff(a, b, names, "moto", "keel"); d != "" {
				t.Errorf("the interpreters diverge:\n%s", d)
				continue
			}
			agree++
		}
		sort.Strings(table)
		fmt.Printf("differential: %d of %d scenarios enter the same states in the same order with the same decisions\n%s\n",
			agree, len(scenarios), strings.Repeat("-", 40))
	})
}
