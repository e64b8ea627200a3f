package harness

import (
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// transcript is the run's conversation as a Step holds it: the first
// message and the tail the context window needs (window.go), and the
// view that model calls are made from. No secret enters it: a tool's
// answer is redacted on the way in. It does not know what is durable:
// positions are absolute (counted from the run's first message, trimmed
// ones included), so the cursor can say how far the store has it without
// the two moving together.
type transcript struct {
	msgs []model.Message
	view transcriptView
	red  redactor
}

// size is how many messages the run's transcript has, trimmed ones
// included.
func (t *transcript) size() int { return len(t.msgs) + t.view.dropped }

// since is the messages from absolute position n on; n is never before
// what trim dropped, since trim keeps what is not durable.
func (t *transcript) since(n int) []model.Message { return t.msgs[n-t.view.dropped:] }

// messages is what the Step holds of the transcript.
func (t *transcript) messages() []model.Message { return t.msgs }

func (t *transcript) add(m model.Message) { t.msgs = append(t.msgs, m) }

// answer adds a tool call's result.
func (t *transcript) answer(callID string, res tool.Result, isErr bool) {
	res = t.red.result(res)
	t.add(model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: callID, Content: res.Content, IsError: isErr}}})
}

// openCalls returns the tool calls of the last assistant message that have
// no result in the transcript yet, in order.
func (t *transcript) openCalls() []model.ToolCall {
	last := -1
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if t.msgs[i].Role == model.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range t.msgs[last+1:] {
		if m.Role == model.RoleUser {
			return nil
		}
		for _, tr := range m.ToolResults {
			answered[tr.CallID] = true
		}
	}
	var open []model.ToolCall
	for _, tc := range t.msgs[last].ToolCalls {
		if !answered[tc.ID] {
			open = append(open, tc)
		}
	}
	return open
}

// lastCalls is the tool calls of the model's last answer.
func (t *transcript) lastCalls() []model.ToolCall {
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if t.msgs[i].Role == model.RoleAssistant {
			return t.msgs[i].ToolCalls
		}
	}
	return nil
}

// setWindow bounds the window at chars characters (windowChars).
func (t *transcript) setWindow(chars int) { t.view.budget = chars }

// request is the window a model call is sent, with how many messages it
// leaves out and how many of those are the model's answers.
func (t *transcript) request() (msgs []model.Message, omitted, omittedAsst int) {
	msgs = t.view.request(t.msgs)
	return msgs, t.view.omitted, t.view.omittedAsst
}

// estimate is the reservation estimate of a request of the window.
func (t *transcript) estimate(system string, maxTokens int) int64 {
	return t.view.estimate(system, maxTokens)
}

// refs is resultFields of the window.
func (t *transcript) refs() map[string]string { return t.view.refs(t.msgs) }

// trim drops from memory what the window left behind and durable says the
// store has (see transcriptView.trim).
func (t *transcript) trim(durable int, force bool) {
	t.msgs, _ = t.view.trim(t.msgs, durable-t.view.dropped, force)
}
