package scripted_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
)

func play(t *testing.T, m *scripted.Model, msgs []model.Message) (model.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	s, err := m.Stream(ctx, model.Request{RunID: "r1", Messages: msgs})
	if err != nil {
		return model.Response{}, err
	}
	return model.Collect(s)
}

func TestTurnsFollowTheTranscript(t *testing.T) {
	m, err := scripted.Parse([]byte(`{"turns":[
		{"text":"drafting","tool_calls":[{"name":"draft","args":{"title":"t"}}]},
		{"tool_calls":[{"name":"publish","args":{"sha256":"{{draft.sha256}}","n":[1,"{{draft.bytes}}"]}}]}],
		"final":"all done"}`))
	if err != nil {
		t.Fatal(err)
	}
	r1, err := play(t, m, []model.Message{{Role: model.RoleUser, Text: "go"}})
	if err != nil || r1.Text != "drafting" || len(r1.ToolCalls) != 1 || string(r1.ToolCalls[0].Args) != `{"title":"t"}` {
		t.Fatalf("turn 1: %+v %v", r1, err)
	}
	// Replaying the same transcript gives the same answer.
	again, _ := play(t, m, []model.Message{{Role: model.RoleUser, Text: "go"}})
	if again.ToolCalls[0].ID != r1.ToolCalls[0].ID {
		t.Fatal("not deterministic")
	}
	msgs := []model.Message{{Role: model.RoleUser, Text: "go"},
		{Role: model.RoleAssistant, ToolCalls: r1.ToolCalls},
		{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: r1.ToolCalls[0].ID, Content: `{"sha256":"abc","bytes":42}`}}}}
	r2, err := play(t, m, msgs)
	if err != nil || string(r2.ToolCalls[0].Args) != `{"n":[1,42],"sha256":"abc"}` {
		t.Fatalf("turn 2 args %s, %v", r2.ToolCalls[0].Args, err)
	}
	msgs = append(msgs, model.Message{Role: model.RoleAssistant, ToolCalls: r2.ToolCalls})
	r3, _ := play(t, m, msgs)
	if r3.Text != "all done" || len(r3.ToolCalls) != 0 || r3.StopReason != "end_turn" {
		t.Fatalf("final %+v", r3)
	}
}

func TestFaults(t *testing.T) {
	cases := []struct {
		fault  string
		check  func(error) bool
		detail string
	}{
		{`{"kind":"cut","attempts":1}`, func(err error) bool { return err != nil }, "stream cut inside tool args"},
		{`{"kind":"malformed","attempts":1}`, func(err error) bool { return errors.Is(err, model.ErrIncomplete) }, "args never close"},
		{`{"kind":"stall","attempts":1}`, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, "stall"},
		{`{"kind":"status_429","attempts":1,"retry_after_seconds":7}`, func(err error) bool {
			var se *model.StatusError
			return errors.As(err, &se) && se.Status == 429 && se.RetryAfter == 7*time.Second
		}, "429"},
		{`{"kind":"status_500","attempts":1}`, func(err error) bool {
			var se *model.StatusError
			return errors.As(err, &se) && se.Status == 500
		}, "500"},
	}
	for _, tc := range cases {
		t.Run(tc.detail, func(t *testing.T) {
			m, err := scripted.Parse([]byte(`{"turns":[{"tool_calls":[{"name":"x","args":{"long":"aaaaaaaaaaaaaaaaaaaaaaaa"}}],"faults":[` + tc.fault + `]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			msgs := []model.Message{{Role: model.RoleUser, Text: "go"}}
			r, err := play(t, m, msgs)
			if !tc.check(err) || len(r.ToolCalls) != 0 {
				t.Fatalf("first attempt: %+v, %v", r, err)
			}
			r, err = play(t, m, msgs) // the fault covers only the first attempt
			if err != nil || len(r.ToolCalls) != 1 {
				t.Fatalf("second attempt: %+v, %v", r, err)
			}
		})
	}
}

func TestBadScripts(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": `{"turns":[],"nope":1}`,
		"not json":      `{"turns":`,
		"negative":      `{"turns":[{"repeat":-1}]}`,
		"unnamed call":  `{"turns":[{"tool_calls":[{"args":{}}]}]}`,
	} {
		if _, err := scripted.Parse([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The turn is the count of the model's answers in the transcript,
// including those the context window left out of the request; repeated
// turns are played by position without one entry per repeat.
func TestTurnCountsOmittedAnswers(t *testing.T) {
	m, err := scripted.Parse([]byte(`{"turns":[
		{"text":"first"},
		{"repeat":100000,"text":"middle"},
		{"text":"last","faults":[{"kind":"status_500","attempts":1}]}],
		"final":"all done"}`))
	if err != nil {
		t.Fatal(err)
	}
	task := model.Message{Role: model.RoleUser, Text: "go"}
	answer := model.Message{Role: model.RoleAssistant, Text: "x"}
	cases := []struct {
		name           string
		omittedAnswers int
		inRequest      int // answers in Messages after the task
		want           string
		wantErr        bool
	}{
		{"the first turn", 0, 0, "first", false},
		{"a repeat, nothing omitted", 0, 1, "middle", false},
		{"the last repeat, from omitted answers", 99990, 10, "middle", false},
		{"the turn after the repeats fails once", 99999, 2, "", true},
		{"then plays", 100000, 1, "last", false},
		{"past the script", 100001, 1, "all done", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs := []model.Message{task}
			for range tc.inRequest {
				msgs = append(msgs, answer)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			s, err := m.Stream(ctx, model.Request{RunID: "r1", Messages: msgs, Omitted: tc.omittedAnswers, OmittedAssistant: tc.omittedAnswers})
			if tc.wantErr {
				var se *model.StatusError
				if !errors.As(err, &se) || se.Status != 500 {
					t.Fatalf("err %v, want the scripted 500", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := model.Collect(s)
			if err != nil || r.Text != tc.want {
				t.Fatalf("played %q (%v), want %q", r.Text, err, tc.want)
			}
		})
	}
}
