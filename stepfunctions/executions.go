package stepfunctions

import (
	"encoding/json"
	"fmt"
)

// ExecutionName is the name of generation gen of a run's execution: the
// run id for 0, {run_id}-g{gen} after, as the Rollover state of
// run.asl.json names the next generation. Every place that starts an
// execution — the API's start, the sweeper's restart, Rollover — uses
// this name, so Step Functions' refusal of a second execution of one name
// makes starting a run idempotent.
func ExecutionName(runID string, gen int) string {
	if gen == 0 {
		return runID
	}
	return fmt.Sprintf("%s-g%d", runID, gen)
}

// ExecutionInput is the state machine input of generation gen, as
// Rollover builds it: starting the same generation twice sends the same
// bytes.
func ExecutionInput(runID string, gen int) string {
	b, _ := json.Marshal(map[string]any{"run_id": runID, "generation": gen})
	return string(b)
}
