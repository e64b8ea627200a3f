package awslocal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

var scenarios = []scenario{approveScenario, denyScenario, cancelScenario, killScenario, crashScenario, rolloverScenario, scheduleScenario}

// TestAWSLocal plays every scenario on moto's interpreter and on Keel's
// executor, each on a stack of its own, prints the states each execution
// entered, and requires the two interpreters to agree (Comparable).
func TestAWSLocal(t *testing.T) {
	w := newWorld(t)
	results := map[Interpreter]map[string]outcome{MotoEngine: {}, KeelExecutor: {}}
	var mu sync.Mutex
	for _, sc := range scenarios {
		// The two interpreters play a scenario at the same time, each on
		// its own stack; scenarios run one after another.
		t.Run(sc.name, func(t *testing.T) {
			for _, in := range []Interpreter{MotoEngine, KeelExecutor} {
				t.Run(string(in), func(t *testing.T) {
					t.Parallel()
					out := play(t, w, sc, in)
					mu.Lock()
					results[in][sc.name] = out
					mu.Unlock()
				})
			}
		})
	}
	t.Run("differential", func(t *testing.T) {
		agree := 0
		for _, sc := range scenarios {
			if d := compare(sc, results[MotoEngine][sc.name], results[KeelExecutor][sc.name]); d != "" {
				t.Errorf("%s: the interpreters diverge:\n%s", sc.name, d)
				continue
			}
			agree++
		}
		fmt.Printf("differential: %d of %d scenarios enter the same states in the same order with the same decisions on moto and on Keel's executor\n",
			agree, len(scenarios))
	})
}

// play deploys a stack for one scenario on one interpreter and plays it.
func play(t *testing.T, w *World, sc scenario, in Interpreter) outcome {
	dest := newDestination(t, t.TempDir())
	opts := sc.opts(dest)
	opts.Name, opts.Interpreter = sc.name+"-"+string(in), in
	start := time.Now()
	s, err := w.Deploy(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := sc.play(t, s, dest)
	for i, e := range out.Executions {
		fmt.Printf("%-14s %-4s g%d %s\n", sc.name, in, i, out.Traces[e])
	}
	fmt.Printf("%-14s %-4s took %s\n", sc.name, in, time.Since(start).Round(time.Millisecond))
	return out
}

// compare is the differential check of one scenario; "" when the
// interpreters agree.
func compare(sc scenario, m, k outcome) string {
	if m.Traces == nil || k.Traces == nil {
		return "not played on both interpreters"
	}
	if len(m.Executions) != len(k.Executions) && sc.name != rolloverScenario.name {
		return fmt.Sprintf("%d executions on moto, %d on Keel's executor", len(m.Executions), len(k.Executions))
	}
	// Executions are named by run id, which differs per stack: compare
	// them by position.
	a, b := map[string]Trace{}, map[string]Trace{}
	var names []string
	for i := range min(len(m.Executions), len(k.Executions)) {
		n := fmt.Sprintf("g%d", i)
		a[n], b[n] = m.Traces[m.Executions[i]], k.Traces[k.Executions[i]]
		names = append(names, n)
	}
	if sc.name == rolloverScenario.name {
		// Where a generation ends depends on how many budget-bound steps
		// the run needed: the generations compare as one run.
		a, b = map[string]Trace{"run": Generations(m.Traces, m.Executions)}, map[string]Trace{"run": Generations(k.Traces, k.Executions)}
		names = []string{"run"}
	}
	return Diff(a, b, names, "moto", "keel")
}
