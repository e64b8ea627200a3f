package telemetry

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"time"
)

// ToolCallsCSV renders tool_calls.csv: one row per tool call, in the order
// the calls started, with the columns ts, tool, input_hash, latency_ms,
// status, error. ts is the start (RFC 3339, UTC); input_hash is the plan
// item's args hash (the same tool with the same hash is the same call
// repeated); error is the recorded, already redacted, error text.
func ToolCallsCSV(tl Timeline) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	rows := [][]string{{"ts", "tool", "input_hash", "latency_ms", "status", "error"}}
	for _, c := range tl.Tools {
		rows = append(rows, []string{c.Start.UTC().Format(time.RFC3339Nano), c.Tool, c.InputHash,
			strconv.FormatInt(c.Latency().Milliseconds(), 10), c.Status, c.Error})
	}
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
