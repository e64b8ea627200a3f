package harness

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
)

// The payloads of the events every plain step writes, encoded by hand: a
// map through encoding/json was a measurable part of a step's CPU time.
// Keys stay in sorted order, as jsonObj writes them.

// callCompleted is model_call_completed's payload. It stands for the call
// as a whole: the model_call_started it replaces lands in the same commit,
// so DurationUS carries the one thing that event added (when it started).
// Zero values are left out; readers take a missing field as zero.
type callCompleted struct {
	Answer       json.RawMessage `json:"answer"`
	CostMicroUSD int64           `json:"cost_micro_usd,omitempty"`
	DurationUS   int64           `json:"duration_us"`
	Model        string          `json:"model,omitempty"`
	// OmittedMessages counts the messages the context window left out of
	// the request (the transcript policy), so a reader sees what the
	// model was not sent.
	OmittedMessages int `json:"omitted_messages,omitempty"`
	// RenamedCallIDs lists the answer's tool calls whose ids the harness
	// made unique (uniqueCallIDs): the model reused an id.
	RenamedCallIDs  []renamedCall `json:"renamed_call_ids,omitempty"`
	ResponseID      string        `json:"response_id,omitempty"`
	RetriedAttempts int           `json:"retried_attempts,omitempty"`
	StopReason      string        `json:"stop_reason,omitempty"`
	ToolCalls       int           `json:"tool_calls"`
	Usage           model.Usage   `json:"usage"`
}

// micros is d in whole microseconds, at least 0.
func micros(d time.Duration) int64 { return max(int64(d/time.Microsecond), 0) }

// toolDoneData is tool_completed's payload; durUS < 0 means the call's
// tool_started is in the log (it was committed before the result) and the
// duration is left out.
func toolDoneData(tool string, resultChars int, durUS int64, concurrent bool) json.RawMessage {
	b := make([]byte, 0, 64+len(tool))
	b = append(b, '{')
	if concurrent {
		b = append(b, `"concurrent":true,`...)
	}
	if durUS >= 0 {
		b = append(b, `"duration_us":`...)
		b = strconv.AppendInt(b, durUS, 10)
		b = append(b, ',')
	}
	b = append(b, `"result_chars":`...)
	b = strconv.AppendInt(b, int64(resultChars), 10)
	b = append(b, `,"tool":`...)
	b = appendJSONString(b, tool)
	return append(b, '}')
}

// checkpointData is checkpoint_written's payload: what the checkpoint row
// itself holds (its id, seq and size), so a store may keep it there.
func checkpointData(cp *run.Checkpoint) json.RawMessage {
	b := make([]byte, 0, 80)
	b = append(b, `{"bytes":`...)
	b = strconv.AppendInt(b, cp.Size, 10)
	b = append(b, `,"checkpoint_id":`...)
	b = appendJSONString(b, cp.ID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, cp.Seq, 10)
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes it: directly when it
// is printable ASCII that needs no escape, through json.Marshal otherwise.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func jsonObj(kv ...any) json.RawMessage {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return mustJSON(m)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	return b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
