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
	var def struct {
		States map[string]struct {
			Parameters struct {
				Name  string `json:"Name.$"`
				Input map[string]string
			}
		}
	}
	if err := json.Unmarshal(stepfunctions.Definition, &def); err != nil {
		t.Fatal(err)
	}
	p := def.States["Rollover"].Parameters
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
