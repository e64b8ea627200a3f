package explain_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// TestPanicRanksFirst: a run's first error is its panic, even after an
// ordinary, unrelated tool error; without a panic it is the earliest.
func TestPanicRanksFirst(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ev := func(seq int64, typ run.EventType, kv ...string) run.Event {
		d := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			d[kv[i]] = kv[i+1]
		}
		data, _ := json.Marshal(d)
		return run.Event{Seq: seq, Type: typ, Time: at.Add(time.Duration(seq) * time.Second), Data: data}
	}
	lint := ev(1, run.EventToolFailed, "tool", "lint", "error", "exit status 1")
	cases := []struct {
		name      string
		events    []run.Event
		wantSeq   int64
		wantPanic bool
	}{
		{"tool panic after a tool error", []run.Event{lint,
			ev(2, run.EventToolFailed, "tool", "boom", "error", run.ToolPanicked("boom", "nil map")),
			ev(3, run.EventRunCompleted)}, 2, true},
		{"dispatch panic handed to a person", []run.Event{lint,
			ev(2, run.EventOpNeedsHuman, "reason", "dispatch to wiki failed with an unknown outcome: "+run.ToolPanicked("pub", "boom"))}, 2, true},
		{"panic that escaped the step", []run.Event{lint,
			ev(2, run.EventRunFailed, "error", run.HandlerPanicked("boom"))}, 2, true},
		{"no panic", []run.Event{lint, ev(2, run.EventRunFailed, "error", "deadline")}, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := explain.Of(telemetry.Bundle{Run: run.Run{ID: "run_1", Status: run.StatusFailed, CreatedAt: at}, Events: tc.events})
			if f := s.FirstErr; f == nil || f.Seq != tc.wantSeq || f.Panic != tc.wantPanic {
				t.Fatalf("first error %+v, want seq %d, panic %v", f, tc.wantSeq, tc.wantPanic)
			}
			if got := strings.Contains(s.Text, "a panic: its stack is in the worker's log"); got != tc.wantPanic {
				t.Errorf("the story tells of a panic: %v, want %v\n%s", got, tc.wantPanic, s.Text)
			}
		})
	}
}

// TestPendingOnAnEndedRun: an operation left pending on a run that ended
// (records of a Keel whose Finalize did so) is not promised a
// reconciliation: it needs a person.
func TestPendingOnAnEndedRun(t *testing.T) {
	op := run.Operation{ID: "op_1", Tool: "pub", Destination: "wiki", IdempotencyKey: "op_1", Status: run.OpPending}
	for _, tc := range []struct {
		status run.Status
		want   string
	}{
		{run.StatusFailed, "needs a person: pending when the run ended"},
		{run.StatusRunning, "pending: intent recorded"},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			s := explain.Of(telemetry.Bundle{Run: run.Run{ID: "run_1", Status: tc.status}, Operations: []run.Operation{op}})
			if len(s.Open) != 1 || !strings.HasPrefix(s.Open[0].Why, tc.want) {
				t.Fatalf("open %+v, want %q", s.Open, tc.want)
			}
			asks := strings.Contains(s.Text, "ask the destination whether operation op_1 happened")
			if asks != (tc.status == run.StatusFailed) {
				t.Errorf("advice to ask the destination: %v\n%s", asks, s.Text)
			}
		})
	}
}
