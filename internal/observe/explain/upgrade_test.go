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

// TestUpgradeStopNext: a run the version check stopped is told with its
// ways out — resolve under the old version, resolve with deny, cancel —
// and no fork, which the running version would stop the same way; once a
// person resolved it, a later needs_human (an uncertain operation) is
// told as before.
func TestUpgradeStopNext(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	blocked := json.RawMessage(`{"from":"aaaaaaaaaaaa1111","to":"bbbbbbbbbbbb2222","problems":["schema changed"]}`)
	ev := func(seq int64, typ run.EventType, data string) run.Event {
		e := run.Event{Seq: seq, Type: typ, Time: at.Add(time.Duration(seq) * time.Second)}
		if data != "" {
			e.Data = json.RawMessage(data)
		}
		return e
	}
	cases := []struct {
		name          string
		events        []run.Event
		want, wantNot []string
	}{
		{"stopped", []run.Event{ev(1, "agent_upgrade_blocked", string(blocked)), ev(2, run.EventRunNeedsHuman, `{"by":"agent_version"}`)},
			[]string{"keel resolve run_x --old-version", "keel resolve run_x --deny", "keel cancel run_x", "aaaaaaaaaaaa", "bbbbbbbbbbbb"},
			[]string{"keel fork"}},
		{"resolved, then stopped by an uncertain operation", []run.Event{ev(1, "agent_upgrade_blocked", string(blocked)),
			ev(2, run.EventRunNeedsHuman, ""), ev(3, run.EventRunResolved, `{"by":"alice","decision":"deny","reason":"no"}`),
			ev(4, run.EventRunNeedsHuman, `{"reason":"unknown outcome"}`)},
			[]string{"resolved by alice: deny (no)", "keel fork run_x"}, []string{"keel resolve"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := explain.Of(telemetry.Bundle{Version: 1, WrittenAt: at,
				Run:    run.Run{ID: "run_x", Agent: "publisher", Status: run.StatusNeedsHuman, CreatedAt: at, UpdatedAt: at},
				Events: tc.events})
			for _, w := range tc.want {
				if !strings.Contains(s.Text, w) {
					t.Errorf("the story lacks %q:\n%s", w, s.Text)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(s.Text, w) {
					t.Errorf("the story has %q:\n%s", w, s.Text)
				}
			}
		})
	}
}
