package stepfunctions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/keelrun/keel/stepfunctions"
)

// TestRolloverNamesAsExecutionName: the Rollover state names and feeds
// generation N+1 exactly as ExecutionName and ExecutionInput do, so the
// sweeper's restart of a generation and Rollover's start of it are one
// execution.
func TestRolloverNamesAsExecutionName(t *testing.T) {
	p := startParameters(t, "Rollover")
	if want := "States.Format('{}-g{}', $.run_id, States.MathAdd($.generation, 1))"; p.Name != want {
		t.Fatalf("Rollover names executions %q; ExecutionName assumes %q", p.Name, want)
	}
	if got := stepfunctions.ExecutionName("run_1", 3); got != "run_1-g3" {
		t.Fatalf("ExecutionName = %q", got)
	}
	if got := stepfunctions.ExecutionName("run_1", 0); got != "run_1" {
		t.Fatalf("generation 0 is named %q, want the run id", got)
	}
	keys := []string{}
	for k := range p.Input {
		keys = append(keys, strings.TrimSuffix(k, ".$"))
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(stepfunctions.ExecutionInput("run_1", 3)), &in); err != nil {
		t.Fatal(err)
	}
	if len(in) != len(keys) || in["run_id"] != "run_1" || in["generation"] != float64(3) {
		t.Fatalf("ExecutionInput %v, Rollover's input has %v", in, keys)
	}
	for _, k := range keys {
		if _, ok := in[k]; !ok {
			t.Fatalf("Rollover's input has %q, ExecutionInput does not", k)
		}
	}
}

// TestStartChildNamesAsExecutionName: StartChild names and feeds a child
// run's first execution as every other starter does (the API, the
// sweeper: ExecutionName(id, 0), ExecutionInput(id, 0)), so a child one
// of them started already is the same execution.
func TestStartChildNamesAsExecutionName(t *testing.T) {
	const child = "States.ArrayGetItem($.step.children, $.c.i)"
	p := startParameters(t, "StartChild")
	if p.Name != child || len(p.Input) != 2 || p.Input["run_id.$"] != child || p.Input["generation"] != float64(0) {
		t.Fatalf("StartChild starts %q with %v; want the child's id as name and {run_id, generation 0}", p.Name, p.Input)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(stepfunctions.ExecutionInput("run_c", 0)), &in); err != nil {
		t.Fatal(err)
	}
	if stepfunctions.ExecutionName("run_c", 0) != "run_c" || len(in) != 2 || in["run_id"] != "run_c" || in["generation"] != float64(0) {
		t.Fatalf("ExecutionName/ExecutionInput of generation 0: %s %v", stepfunctions.ExecutionName("run_c", 0), in)
	}
}

// executionStart is what a states:startExecution task of the definition
// names and feeds the execution it starts.
type executionStart struct {
	Name  string `json:"Name.$"`
	Input map[string]any
}

// startParameters is the Parameters of the definition's state.
func startParameters(t *testing.T, state string) executionStart {
	t.Helper()
	var def struct {
		States map[string]struct{ Parameters executionStart }
	}
	if err := json.Unmarshal(stepfunctions.Definition, &def); err != nil {
		t.Fatal(err)
	}
	return def.States[state].Parameters
}
