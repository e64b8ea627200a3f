package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/keeltest"
)

// TestSubAgentsSurviveKills runs the example as its own binary (`dev`) and
// SIGKILLs it at a point of the sub-agent protocol, then restarts it: each
// coordinator call has exactly one child run, the publisher's effect
// happens once, and the coordinator completes with both children's
// answers. beforeApproval: the point is reached before the publisher asks
// for its approval.
func TestSubAgentsSurviveKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and kills the example's program (make test-go runs it)")
	}
	bin := keeltest.Build(t, ".")
	cases := []struct {
		point          string
		beforeApproval bool
	}{
		{"", false},
		{"after_intent", true},    // the first child's intent is durable, the child is not created
		{"child_start", true},     // the first child exists, the coordinator's record of it does not
		{"child_finish", true},    // the researcher ended; the coordinator does not know
		{"after_dispatch", false}, // the publisher published; its record does not say so
		{"parent_resume", false},  // both children ended; their answers are not recorded
		{"child_start:2", true},   // the second child exists, its record does not
		{"child_finish:2", false}, // the publisher ended; the coordinator does not know
	}
	for _, tc := range cases {
		name := tc.point
		if name == "" {
			name = "no_kill"
		}
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir() // the board lives under TMPDIR
			env := []string{"TMPDIR=" + tmp}
			p := keeltest.StartProgram(t, bin, append(env, "KEEL_FAULTPOINT="+tc.point)...)
			id := p.StartRun(t, "coordinator", "Report on Q3")
			if tc.point != "" && tc.beforeApproval {
				p.WaitExit(t)
				p.Restart(t, env...)
			}
			pub := publisherOf(t, p, id)
			ap := p.WaitApproval(t, pub)
			if ap.Tool != "publish_summary" {
				t.Fatalf("approval %+v", ap)
			}
			p.Approve(t, pub, ap)
			if tc.point != "" && !tc.beforeApproval {
				p.WaitExit(t)
				p.Restart(t, env...)
			}
			r := p.WaitFor(t, id, "completed")
			if r.Output != "Q3 is researched and the summary is published." {
				t.Fatalf("coordinator %+v", r)
			}
			kids := p.Children(t, id)
			if len(kids) != 2 {
				t.Fatalf("%d children, want exactly 2: %+v", len(kids), kids)
			}
			for _, k := range kids {
				if k.Status != "completed" {
					t.Fatalf("child %+v", k)
				}
			}
			evs := p.Events(t, id)
			if n := keeltest.Count(evs, "child_ended"); n != 2 {
				t.Fatalf("child_ended %d times, want 2", n)
			}
			boards, err := filepath.Glob(filepath.Join(tmp, "keel-board", "op_*"))
			if err != nil || len(boards) != 1 {
				t.Fatalf("board %v %v: want exactly one publication", boards, err)
			}
			b, _ := os.ReadFile(boards[0])
			if string(b) != "Q3 revenue grew 12%." {
				t.Fatalf("published %q", b)
			}
		})
	}
}

// publisherOf waits for the coordinator's publisher child and returns its id.
func publisherOf(t *testing.T, p *keeltest.Program, id string) string {
	t.Helper()
	deadline := time.Now().Add(keeltest.HangGuard)
	for time.Now().Before(deadline) {
		for _, k := range p.Children(t, id) {
			if k.Agent == "publisher" {
				return k.ID
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no publisher child of %s", id)
	return ""
}

// TestCancelStopsEveryChild: cancelling the coordinator while its
// children run cancels them, and the publisher never publishes.
func TestCancelStopsEveryChild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the example's program (make test-go runs it)")
	}
	bin := keeltest.Build(t, ".")
	tmp := t.TempDir()
	p := keeltest.StartProgram(t, bin, "TMPDIR="+tmp)
	id := p.StartRun(t, "coordinator", "Report on Q3")
	pub := publisherOf(t, p, id)
	p.WaitApproval(t, pub)
	p.Cancel(t, id)
	p.WaitFor(t, id, "cancelled")
	if r := p.WaitFor(t, pub, "cancelled"); !strings.Contains(r.Status, "cancelled") {
		t.Fatalf("publisher %+v", r)
	}
	if boards, _ := filepath.Glob(filepath.Join(tmp, "keel-board", "op_*")); len(boards) != 0 {
		t.Fatalf("published %v after the cancel", boards)
	}
}
