package harness

import (
	"strconv"

	"github.com/keelrun/keel/internal/kernel/model"
)

// renamedCall records one tool call whose id the harness changed: the
// model gave it an id that an earlier call of the same answer, or of an
// earlier answer, already has (or none at all).
type renamedCall struct {
	Index int    `json:"index"` // the call's place in the answer, from 0
	From  string `json:"from"`
	To    string `json:"to"`
}

// uniqueCallIDs makes the ids of an answer's tool calls unique, among
// themselves and against every call of transcript, deterministically: a
// repeated id X becomes X_2 (X_3, … when taken), an empty one call_N (N
// its place from 1). A plan item, its result and its answer are keyed by
// the call id, so two calls sharing one would drop the first silently
// and answer the second twice; renamed, each runs and is answered once,
// and the model sees the ids it is answered under. The first call that
// holds an id keeps it. calls is not modified.
func uniqueCallIDs(calls []model.ToolCall, transcript []model.Message) ([]model.ToolCall, []renamedCall) {
	taken := map[string]bool{}
	for _, m := range transcript {
		for _, tc := range m.ToolCalls {
			taken[tc.ID] = true
		}
	}
	var out []model.ToolCall
	var renamed []renamedCall
	for i, tc := range calls {
		if tc.ID != "" && !taken[tc.ID] {
			taken[tc.ID] = true
			continue
		}
		base, n := tc.ID, 2
		if base == "" {
			base, n = "call", i+1
		}
		id := base + "_" + strconv.Itoa(n)
		for taken[id] {
			n++
			id = base + "_" + strconv.Itoa(n)
		}
		taken[id] = true
		if out == nil {
			out = append([]model.ToolCall(nil), calls...)
		}
		out[i].ID = id
		renamed = append(renamed, renamedCall{Index: i, From: tc.ID, To: id})
	}
	if out == nil {
		return calls, nil
	}
	return out, renamed
}
