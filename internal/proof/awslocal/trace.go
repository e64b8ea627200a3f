package awslocal

import (
	"encoding/json"
	"strings"

	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

// Trace is what the differential check compares of one execution: the
// states entered, in order, each Step (and RunOnFargate) with the decision
// it returned ("Step=approval"), and how the execution closed.
type Trace struct {
	States []string
	Close  string // ExecutionSucceeded, ExecutionFailed(Error), ...
	// Cause is the failed execution's cause (not compared: the two
	// interpreters word causes differently).
	Cause string
}

// String is the trace as one line: "Init → Step=approval → ... | ExecutionSucceeded".
func (t Trace) String() string { return strings.Join(t.States, " → ") + " | " + t.Close }

// TraceOf reads a trace from a GetExecutionHistory answer (oldest first).
func TraceOf(evs []sfntypes.HistoryEvent) Trace {
	var t Trace
	for _, e := range evs {
		switch {
		case e.StateEnteredEventDetails != nil:
			t.States = append(t.States, deref(e.StateEnteredEventDetails.Name))
		case e.StateExitedEventDetails != nil:
			name := deref(e.StateExitedEventDetails.Name)
			if (name == "Step" || name == "RunOnFargate") && len(t.States) > 0 {
				var out struct {
					Step struct {
						Next string `json:"next"`
					} `json:"step"`
				}
				if json.Unmarshal([]byte(deref(e.StateExitedEventDetails.Output)), &out) == nil && out.Step.Next != "" {
					t.States[len(t.States)-1] += "=" + out.Step.Next
				}
			}
		case e.Type == sfntypes.HistoryEventTypeExecutionSucceeded:
			t.Close = string(e.Type)
		case e.Type == sfntypes.HistoryEventTypeExecutionFailed:
			t.Close = string(e.Type)
			if d := e.ExecutionFailedEventDetails; d != nil {
				t.Close += "(" + deref(d.Error) + ")"
				t.Cause = deref(d.Cause)
			}
		case e.Type == sfntypes.HistoryEventTypeExecutionAborted, e.Type == sfntypes.HistoryEventTypeExecutionTimedOut:
			t.Close = string(e.Type)
		}
	}
	return t
}

// Retries counts the task failures a state's Retry absorbed: the
// TaskFailed/LambdaFunctionFailed events named by error.
func Retries(evs []sfntypes.HistoryEvent) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		switch {
		case e.TaskFailedEventDetails != nil:
			n[deref(e.TaskFailedEventDetails.Error)]++
		case e.LambdaFunctionFailedEventDetails != nil:
			n[deref(e.LambdaFunctionFailedEventDetails.Error)]++
		}
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
