package awslocal

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

var scenarios = []scenario{approveScenario, denyScenario, cancelScenario, killScenario, crashScenario, rolloverScenario, scheduleScenario, subagentsScenario, versionsScenario}

// TestAWSLocal plays every scenario on moto's interpreter and on Keel's
// executor, each on a stack of its own, prints the states each execution
// entered, and requires the two interpreters to agree (Comparable).
func TestAWSLocal(t *testing.T) {
	t.Parallel() // beside TestLambdaPackages' build, which is CPU while this mostly waits
	playAll(t, newMotoWorld(t))
}

// playAll plays every scenario the world's target supports on the
// target's own interpreter and on Keel's executor, and checks that the
// two agree; a scenario the target cannot play is skipped with the reason
// printed.
func playAll(t *testing.T, w *World) {
	results := map[Interpreter]map[string]outcome{TargetEngine: {}, KeelExecutor: {}}
	var mu sync.Mutex
	var played []scenario
	for _, sc := range scenarios {
		if why := w.Target.Unsupported(sc.name); why != "" {
			fmt.Printf("%-14s SKIPPED on %s: %s\n", sc.name, w.Target.Name(), why)
			continue
		}
		played = append(played, sc)
		// The two interpreters play a scenario at the same time, each on
		// its own stack; scenarios run one after another.
		t.Run(sc.name, func(t *testing.T) {
			for _, in := range []Interpreter{TargetEngine, KeelExecutor} {
				t.Run(w.Label(in), func(t *testing.T) {
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
		for _, sc := range played {
			if d := compare(sc, results[TargetEngine][sc.name], results[KeelExecutor][sc.name], w.Label(TargetEngine)); d != "" {
				t.Errorf("%s: the interpreters diverge:\n%s", sc.name, d)
				continue
			}
			agree++
		}
		fmt.Printf("differential: %d of %d scenarios enter the same states in the same order with the same decisions on %s and on Keel's executor (%d of %d scenarios played)\n",
			agree, len(played), w.Label(TargetEngine), len(played), len(scenarios))
	})
}

// play deploys a stack for one scenario on one interpreter and plays it.
func play(t *testing.T, w *World, sc scenario, in Interpreter) outcome {
	dest := newDestination(t, w, t.TempDir())
	opts := sc.opts(dest)
	opts.Name, opts.Interpreter = sc.name+"-"+string(in), in
	start := time.Now()
	s, err := w.Deploy(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer reportSandboxes(t, s)
	out := sc.play(t, s, dest)
	for i, e := range out.Executions {
		fmt.Printf("%-14s %-4s g%d %s\n", sc.name, w.Label(in), i, out.Traces[e])
	}
	fmt.Printf("%-14s %-4s took %s\n", sc.name, w.Label(in), time.Since(start).Round(time.Millisecond))
	return out
}

// compare is the differential check of one scenario; "" when the
// interpreters agree.
func compare(sc scenario, m, k outcome, target string) string {
	if m.Traces == nil || k.Traces == nil {
		return "not played on both interpreters"
	}
	if len(m.Executions) != len(k.Executions) && sc.name != rolloverScenario.name {
		return fmt.Sprintf("%d executions on %s, %d on Keel's executor", len(m.Executions), target, len(k.Executions))
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
	return Diff(a, b, names, target, "keel")
}

// reportSandboxes prints, for a failed scenario, the end of each function
// sandbox's log: a CI run keeps only the test's output, and a timeout or
// a crash inside a function is told there and nowhere else.
func reportSandboxes(t *testing.T, s *Stack) {
	if !t.Failed() {
		return
	}
	roles := make([]string, 0, len(s.Functions))
	for role := range s.Functions {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	for _, role := range roles {
		if fn := s.Functions[role]; fn.Sandbox != nil {
			t.Logf("%s sandbox (%s), last lines:\n%s", role, fn.route(), fn.Sandbox.LogTail(15))
		}
	}
}
