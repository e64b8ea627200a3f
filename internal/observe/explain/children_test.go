package explain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// TestChildStory: the parent's story names each child run and how it
// ended.
func TestChildStory(t *testing.T) {
	at := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	ev := func(seq int64, typ run.EventType, data string) run.Event {
		return run.Event{RunID: "run_p", Seq: seq, Type: typ, Time: at.Add(time.Duration(seq) * time.Second), Data: []byte(data)}
	}
	b := telemetry.Bundle{Run: run.Run{ID: "run_p", Agent: "coordinator", Status: run.StatusCompleted}, Events: []run.Event{
		ev(1, run.EventRunCreated, `{}`),
		ev(2, run.EventChildStarted, `{"child_run_id":"run_c1","agent":"researcher","how":"dispatched"}`),
		ev(3, run.EventChildStarted, `{"child_run_id":"run_c2","agent":"publisher","how":"found"}`),
		ev(4, run.EventChildEnded, `{"child_run_id":"run_c1","agent":"researcher","status":"completed"}`),
		ev(5, run.EventChildEnded, `{"child_run_id":"run_c2","agent":"publisher","status":"failed","error":"budget exceeded: max_spend (200000)"}`),
		ev(6, run.EventRunCompleted, `{}`),
	}}
	s := explain.Of(b)
	for _, want := range []string{
		"started child run run_c1 of sub-agent researcher",
		"child run run_c2 of sub-agent publisher found after a restart",
		"child run run_c1 (researcher) ended completed",
		"child run run_c2 (publisher) ended failed: budget exceeded: max_spend (200000)",
	} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("the story lacks %q:\n%s", want, s.Text)
		}
	}
}
