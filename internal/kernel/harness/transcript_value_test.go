package harness

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/tool"
)

func TestTranscriptCalls(t *testing.T) {
	user := model.Message{Role: model.RoleUser, Text: "go"}
	ask := func(ids ...string) model.Message {
		m := model.Message{Role: model.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: id, Name: "echo"})
		}
		return m
	}
	res := func(id string) model.Message {
		return model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: id}}}
	}
	cases := []struct {
		name       string
		msgs       []model.Message
		open, last []string
	}{
		{"empty", nil, nil, nil},
		{"the task only", []model.Message{user}, nil, nil},
		{"all open", []model.Message{user, ask("a", "b")}, []string{"a", "b"}, []string{"a", "b"}},
		{"one answered", []model.Message{user, ask("a", "b"), res("a")}, []string{"b"}, []string{"a", "b"}},
		{"all answered", []model.Message{user, ask("a"), res("a")}, nil, []string{"a"}},
		{"new input closes the answer", []model.Message{user, ask("a"), user}, nil, []string{"a"}},
		{"an answer without calls", []model.Message{user, ask("a"), res("a"), ask()}, nil, nil},
		{"only the last answer counts", []model.Message{user, ask("a"), ask("b")}, []string{"b"}, []string{"b"}},
	}
	ids := func(tcs []model.ToolCall) []string {
		var out []string
		for _, tc := range tcs {
			out = append(out, tc.ID)
		}
		return out
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := transcript{msgs: tc.msgs}
			if got := ids(tr.openCalls()); !reflect.DeepEqual(got, tc.open) {
				t.Errorf("openCalls %v, want %v", got, tc.open)
			}
			if got := ids(tr.lastCalls()); !reflect.DeepEqual(got, tc.last) {
				t.Errorf("lastCalls %v, want %v", got, tc.last)
			}
		})
	}
}

// Positions are absolute: what trim drops from memory still counts, and
// what is not durable is never dropped, whatever the window.
func TestTranscriptPositions(t *testing.T) {
	cases := []struct {
		name          string
		window        int // characters
		turns         int
		durableEvery  int
		force         bool
		wantHeldBelow int // held messages at the end are fewer than this (0: no bound)
	}{
		{"no bound keeps all", 0, 40, 3, false, 0},
		{"a small window trims lazily", 300, 200, 2, false, 200},
		{"forced trims keep the window only", 300, 200, 1, true, 40},
		{"nothing durable: nothing dropped", 300, 50, 1 << 30, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := transcript{}
			tr.setWindow(tc.window)
			tr.add(model.Message{Role: model.RoleUser, Text: "task"})
			var all []model.Message
			all = append(all, tr.msgs...)
			durable := 0
			for i := 1; i <= tc.turns; i++ {
				id := fmt.Sprintf("c%d", i)
				tr.add(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "echo", Args: json.RawMessage(`{"x":"yyyyyyyyyy"}`)}}})
				tr.answer(id, tool.Result{Content: `{"echo":"yyyyyyyyyy"}`}, false)
				all = append(all, tr.msgs[len(tr.msgs)-2:]...)
				if i%tc.durableEvery == 0 {
					durable = tr.size()
				}
				tr.request()
				tr.trim(durable, tc.force)
				if tr.size() != len(all) {
					t.Fatalf("turn %d: size %d, the run has %d messages", i, tr.size(), len(all))
				}
				if got, want := tr.since(durable), all[durable:]; !reflect.DeepEqual(got, want) {
					t.Fatalf("turn %d: since(%d) is %d messages, want %d", i, durable, len(got), len(want))
				}
				if tr.msgs[0].Text != "task" {
					t.Fatalf("turn %d: the task was trimmed", i)
				}
			}
			if tc.wantHeldBelow > 0 && len(tr.msgs) >= tc.wantHeldBelow {
				t.Fatalf("holds %d messages, want fewer than %d", len(tr.msgs), tc.wantHeldBelow)
			}
			if tc.wantHeldBelow == 0 && len(tr.msgs) != len(all) {
				t.Fatalf("holds %d messages, want all %d", len(tr.msgs), len(all))
			}
		})
	}
}
