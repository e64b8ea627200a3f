package harness

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/model"
)

// The incremental view must equal the whole-transcript functions it
// replaces after every append, whatever the shape of the transcript.
func TestTranscriptViewMatchesWholeTranscript(t *testing.T) {
	call := func(id, name, args string) model.Message {
		return model.Message{Role: model.RoleAssistant, Text: "t", ToolCalls: []model.ToolCall{{ID: id, Name: name, Args: json.RawMessage(args)}}}
	}
	res := func(id, content string, isErr bool) model.Message {
		return model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: id, Content: content, IsError: isErr}}}
	}
	cases := []struct {
		name string
		msgs []model.Message
	}{
		{"empty", nil},
		{"user only", []model.Message{{Role: model.RoleUser, Text: "hello"}}},
		{"consecutive tool messages coalesce", []model.Message{{Role: model.RoleUser, Text: "go"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "search", Args: json.RawMessage(`{}`)}, {ID: "b", Name: "fetch", Args: json.RawMessage(`{}`)}}},
			res("a", `{"key":"artifact/one/1234"}`, false), res("b", `{"url":"https://example.com/x"}`, false),
			call("c", "search", `{"q":"artifact/one/1234"}`), res("c", `{"key":"artifact/two/5678"}`, false)}},
		{"an error does not shadow a success", []model.Message{{Role: model.RoleUser, Text: "go"},
			call("a", "search", `{}`), res("a", `{"key":"artifact/one/1234"}`, false),
			call("b", "search", `{}`), res("b", `{"key":"artifact/bad/0000"}`, true)}},
		{"non-JSON latest result hides the older one", []model.Message{{Role: model.RoleUser, Text: "go"},
			call("a", "search", `{}`), res("a", `{"key":"artifact/one/1234"}`, false),
			call("b", "search", `{}`), res("b", `plain text`, false)}},
		{"same value in two tools: the latest wins", []model.Message{{Role: model.RoleUser, Text: "go"},
			call("a", "search", `{}`), res("a", `{"key":"shared-value-1"}`, false),
			call("b", "fetch", `{}`), res("b", `{"id":"shared-value-1"}`, false),
			{Role: model.RoleUser, Text: "more"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v transcriptView
			for n := 0; n <= len(tc.msgs); n++ {
				msgs := tc.msgs[:n]
				want := coalesce(msgs)
				if got := v.request(msgs); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("after %d: request %+v, want %+v", n, got, want)
				}
				req := model.Request{System: "sys", Messages: want, MaxTokens: 100}
				if got, want := v.estimate("sys", 100), estimateTokens(req); got != want {
					t.Fatalf("after %d: estimate %d, want %d", n, got, want)
				}
				if got, want := v.refs(msgs), resultFields(msgs); !reflect.DeepEqual(got, want) {
					t.Fatalf("after %d: refs %v, want %v", n, got, want)
				}
			}
		})
	}
}

// A request already handed to a model never changes under it when later
// tool results coalesce into its last message.
func TestTranscriptViewKeepsSentRequests(t *testing.T) {
	msgs := []model.Message{{Role: model.RoleUser, Text: "go"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "x"}, {ID: "b", Name: "x"}}},
		{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: "a", Content: "1"}}}}
	var v transcriptView
	sent := v.request(msgs)
	msgs = append(msgs, model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: "b", Content: "2"}}})
	now := v.request(msgs)
	if n := len(sent[2].ToolResults); n != 1 {
		t.Fatalf("the sent request's last message now has %d results", n)
	}
	if n := len(now[2].ToolResults); n != 2 {
		t.Fatalf("the new request's last message has %d results, want 2", n)
	}
}

// randomTranscript is a transcript of n messages in the shapes a run
// makes: answers with zero to three calls, their results (some errors, some
// JSON objects, some plain text), new user input now and then.
func randomTranscript(seed uint64, n int) []model.Message {
	rng := rand.New(rand.NewPCG(seed, 1))
	tools := []string{"search", "fetch", "draft"}
	msgs := []model.Message{{Role: model.RoleUser, Text: "Write the research report."}}
	for call := 0; len(msgs) < n; {
		if rng.IntN(12) == 0 {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: strings.Repeat("more ", 1+rng.IntN(8))})
		}
		a := model.Message{Role: model.RoleAssistant, Text: strings.Repeat("t", rng.IntN(40))}
		for range rng.IntN(4) {
			call++
			a.ToolCalls = append(a.ToolCalls, model.ToolCall{ID: fmt.Sprintf("c%d", call), Name: tools[rng.IntN(len(tools))],
				Args: json.RawMessage(fmt.Sprintf(`{"q":"%s"}`, strings.Repeat("q", rng.IntN(30))))})
		}
		msgs = append(msgs, a)
		for _, tc := range a.ToolCalls {
			var content string
			switch rng.IntN(4) {
			case 0:
				content = "plain text " + strings.Repeat("p", rng.IntN(50))
			default:
				content = fmt.Sprintf(`{"key":"artifact/%s/%d","n":%d}`, tc.Name, rng.IntN(1000), rng.IntN(9))
			}
			msgs = append(msgs, model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: tc.ID, Content: content, IsError: rng.IntN(6) == 0}}})
		}
	}
	return msgs[:n]
}

// The incremental window equals the transcript policy applied to the whole
// transcript after every append — the request, the token estimate, the
// answer's references and what is left out — however the step trims its
// copy between appends. A warm worker (many small folds and trims) and a
// Step after a restart (one fold of the whole transcript) therefore send
// the model the same messages.
func TestTranscriptWindowMatchesPolicy(t *testing.T) {
	cases := []struct {
		name   string
		budget int // characters; 0: no window
		trim   string
	}{
		{"no window", 0, "never"},
		{"window of one character: only the last answer", 1, "lazy"},
		{"small window, lazy trims", 300, "lazy"},
		{"small window, forced trims", 300, "forced"},
		{"small window, no trims", 300, "never"},
		{"larger window, lazy trims", 2000, "lazy"},
	}
	for _, tc := range cases {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed %d", tc.name, seed), func(t *testing.T) {
				all := randomTranscript(seed, 400)
				v := transcriptView{budget: tc.budget}
				var held []model.Message
				for n := 1; n <= len(all); n++ {
					held = append(held, all[n-1])
					whole := all[:n]
					win, omitted, asst := window(whole, tc.budget)
					if got, want := v.request(held), coalesce(win); !reflect.DeepEqual(got, want) {
						t.Fatalf("after %d: request %+v, want %+v", n, got, want)
					}
					if v.omitted != omitted || v.omittedAsst != asst {
						t.Fatalf("after %d: omitted %d (%d answers), want %d (%d)", n, v.omitted, v.omittedAsst, omitted, asst)
					}
					req := model.Request{System: "sys", Messages: win, MaxTokens: 100}
					if got, want := v.estimate("sys", 100), estimateTokens(req); got != want {
						t.Fatalf("after %d: estimate %d, want %d", n, got, want)
					}
					if got, want := v.refs(held), resultFields(win); !reflect.DeepEqual(got, want) {
						t.Fatalf("after %d: refs %v, want %v", n, got, want)
					}
					switch tc.trim {
					case "lazy":
						held, _ = v.trim(held, len(held), false)
					case "forced":
						held, _ = v.trim(held, len(held), true)
					}
					if held[0].Text != all[0].Text || !reflect.DeepEqual(held[len(held)-1], all[n-1]) {
						t.Fatalf("after %d: trim lost the task or the last message", n)
					}
				}
			})
		}
	}
}

// Trim never drops what is not committed yet: the step's next commit
// writes msgs[committed:].
func TestTranscriptTrimKeepsUncommitted(t *testing.T) {
	all := randomTranscript(7, 300)
	v := transcriptView{budget: 200}
	held, committed := all[:1], 1
	for n := 2; n <= len(all); n++ {
		held = append(held, all[n-1])
		if n%5 == 0 {
			committed = len(held) // a flush
		}
		uncommitted := slices.Clone(held[committed:])
		held, committed = v.trim(held, committed, n%3 == 0)
		if !reflect.DeepEqual(held[committed:], uncommitted) {
			t.Fatalf("after %d: uncommitted messages changed by trim", n)
		}
	}
}

// What a step keeps of a long run's transcript between model calls is
// bounded by the context window, not by the run's length: after 1,000 or
// 30,000 iterations the view and the transcript it holds are the same size.
// (Before the window they held every message since the run began.)
func TestTranscriptHeldIsBoundedByWindow(t *testing.T) {
	const budget = 4000 // characters: about a hundred iterations
	v := transcriptView{budget: budget}
	held := []model.Message{{Role: model.RoleUser, Text: "loop"}}
	type size struct{ msgs, capMsgs, coal, capCoal, names, answers int }
	measure := func() size {
		return size{len(held), cap(held), len(v.coal), cap(v.coal), len(v.names), len(v.answers)}
	}
	var at1k size
	for i := 1; i <= 30000; i++ {
		id := fmt.Sprintf("call_%d_0", i)
		held = append(held,
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "echo", Args: json.RawMessage(`{"text":"hello"}`)}}},
			model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: id, Content: `{"text":"hello"}`}}})
		req := v.request(held)
		// As the step does: a lazy trim after each commit, a forced one
		// when a Step ends (every 20 iterations here).
		held, _ = v.trim(held, len(held), i%20 == 0)
		win := len(req)
		got := measure()
		// Amortized trimming keeps at most as much behind the window as
		// in it; the slack of an append doubles that at most.
		if got.msgs > 2*win+2 || got.capMsgs > 4*win+8 || got.coal > 2*win+2 || got.capCoal > 4*win+8 ||
			got.names > win || got.answers > win {
			t.Fatalf("iteration %d: window of %d messages, held %+v", i, win, got)
		}
		if i == 1000 {
			at1k = got
		}
		if i == 30000 && (got.capMsgs > at1k.capMsgs*2 || got.capCoal > at1k.capCoal*2) {
			t.Fatalf("held %+v after 30,000 iterations, %+v after 1,000", got, at1k)
		}
	}
	if v.omittedAsst < 29000 {
		t.Fatalf("omitted %d answers: the window did not move", v.omittedAsst)
	}
}

// estimateTokens is the reservation estimate of a whole request, counted
// afresh: the oracle the incremental view's estimate must equal.
func estimateTokens(req model.Request) int64 {
	n := len(req.System)
	for _, m := range req.Messages {
		n += msgChars(m)
	}
	return int64(n/4) + int64(req.MaxTokens)
}
