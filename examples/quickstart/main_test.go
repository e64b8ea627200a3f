package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/keeltest"
)

// TestQuickstart runs the README's program as a user would — its own
// binary, `dev`, the scripted model through KEEL_MODEL — and kills it right
// after the note was sent and before Keel recorded it: after the restart
// the send is looked up, not repeated.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the example's program (make test-go runs it)")
	}
	bin := keeltest.Build(t, ".")
	tmp := t.TempDir() // the outbox lives under TMPDIR
	p := keeltest.StartProgram(t, bin, "KEEL_MODEL=scripted:script.json", "TMPDIR="+tmp, "KEEL_FAULTPOINT=after_dispatch")
	id := p.StartRun(t, "mailer", "Tell Ada the report is ready")
	ap := p.WaitApproval(t, id)
	if ap.Tool != "send_note" || !strings.Contains(string(ap.Args), "ada@example.com") {
		t.Fatalf("approval %+v", ap)
	}
	p.Approve(t, id, ap)
	p.WaitExit(t) // the fault point's SIGKILL, right after the send
	p.Restart(t, "KEEL_MODEL=scripted:script.json", "TMPDIR="+tmp)
	if r := p.WaitFor(t, id, "completed"); r.Output != "Sent the note to ada@example.com." {
		t.Fatalf("run %+v", r)
	}
	notes, err := filepath.Glob(filepath.Join(tmp, "keel-outbox", "op_*"))
	if err != nil || len(notes) != 1 {
		t.Fatalf("outbox %v %v: want exactly one note", notes, err)
	}
	evs := p.Events(t, id)
	if keeltest.Count(evs, "op_intent") != 1 || keeltest.Count(evs, "op_reconciled") != 1 {
		t.Fatalf("events: %d op_intent, %d op_reconciled", keeltest.Count(evs, "op_intent"), keeltest.Count(evs, "op_reconciled"))
	}
	b, _ := os.ReadFile(notes[0])
	if !strings.Contains(string(b), "The report is ready.") {
		t.Fatalf("note %q", b)
	}
}
