package harness

import (
	"encoding/json"

	"github.com/keelrun/keel/internal/kernel/model"
)

// recordedAnswer is a model answer as model_call_completed records it.
type recordedAnswer struct {
	Text  string         `json:"text,omitempty"`
	Calls []recordedCall `json:"calls,omitempty"`
	// OmittedBytes > 0: the answer was larger than maxRecordedAnswer and
	// is not in the event (it is in the checkpoint); the run cannot be
	// recorded as a script.
	OmittedBytes int `json:"omitted_bytes,omitempty"`
}

// maxRecordedAnswer bounds the answer an event holds: an event is one
// item of the store (a DynamoDB item is at most 400 KB), and the answer is
// in the checkpoint anyway.
const maxRecordedAnswer = 64 << 10

// recordAnswer records resp; refs is resultFields of the transcript the
// model was sent.
func recordAnswer(resp model.Response, refs map[string]string) recordedAnswer {
	var a recordedAnswer
	_ = json.Unmarshal(answerJSON(resp, refs), &a)
	return a
}

// answerJSON is recordAnswer's encoding, marshalled once: the event embeds
// these bytes as they are.
func answerJSON(resp model.Response, refs map[string]string) json.RawMessage {
	a := recordedAnswer{Text: resp.Text, Calls: callsWithRefs(resp.ToolCalls, refs)}
	b, err := json.Marshal(a)
	if err != nil || len(b) > maxRecordedAnswer {
		b, _ = json.Marshal(recordedAnswer{OmittedBytes: max(len(b), 1)})
	}
	return b
}

type recordedCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// ReplayArgs, when set, are Args with every string (of minRefLen
	// bytes or more) that equals a field of an earlier tool's latest
	// result replaced by a reference to it ("{{tool.field}}", the scripted model's template): a replay then
	// passes what its own run's tool returned (an artifact key, an id),
	// not this run's value. Only tool and field names are added.
	ReplayArgs json.RawMessage `json:"replay_args,omitempty"`
}

func answerCalls(tcs []model.ToolCall, transcript []model.Message) []recordedCall {
	return callsWithRefs(tcs, resultFields(transcript))
}

func callsWithRefs(tcs []model.ToolCall, refs map[string]string) []recordedCall {
	out := make([]recordedCall, 0, len(tcs))
	for _, tc := range tcs {
		args := tc.Args
		if !json.Valid(args) {
			// Never dispatched (the call fails validation); kept as a
			// string so that the event stays JSON.
			args, _ = json.Marshal(string(tc.Args))
		}
		c := recordedCall{Name: tc.Name, Args: args}
		var v any
		if len(refs) > 0 && json.Unmarshal(args, &v) == nil {
			if v, changed := templated(v, refs); changed {
				c.ReplayArgs, _ = json.Marshal(v)
			}
		}
		out = append(out, c)
	}
	return out
}

// minRefLen is the shortest result value answerCalls turns into a
// reference.
const minRefLen = 8

// resultFields maps each string value of a top-level field of each tool's
// latest successful JSON-object result to "{{tool.field}}"; where two
// results hold the value, the latest wins.
func resultFields(msgs []model.Message) map[string]string {
	names := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Name
		}
	}
	refs := map[string]string{}
	seen := map[string]bool{}
	for i := len(msgs) - 1; i >= 0; i-- {
		for j := len(msgs[i].ToolResults) - 1; j >= 0; j-- {
			tr := msgs[i].ToolResults[j]
			tool := names[tr.CallID]
			if tool == "" || tr.IsError || seen[tool] {
				continue
			}
			seen[tool] = true
			addRefs(refs, tool, tr.Content)
		}
	}
	return refs
}

// addRefs adds the references of one tool's result content to refs; a
// value already taken keeps its reference.
func addRefs(refs map[string]string, tool, content string) {
	var obj map[string]any
	if json.Unmarshal([]byte(content), &obj) != nil {
		return
	}
	for f, v := range obj {
		// Short values ("open", a small id) are more likely the
		// model's own words than a value it copied, and replay as
		// they are.
		if str, ok := v.(string); ok && len(str) >= minRefLen {
			if _, taken := refs[str]; !taken {
				refs[str] = "{{" + tool + "." + f + "}}"
			}
		}
	}
}

func templated(v any, refs map[string]string) (any, bool) {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			var c bool
			t[k], c = templated(e, refs)
			changed = changed || c
		}
	case []any:
		for i, e := range t {
			var c bool
			t[i], c = templated(e, refs)
			changed = changed || c
		}
	case string:
		if r, ok := refs[t]; ok {
			return r, true
		}
	}
	return v, changed
}
