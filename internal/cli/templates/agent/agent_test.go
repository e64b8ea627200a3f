package main

import (
	"context"
	"strings"
	"testing"

	"github.com/keelrun/keel/keeltest"
)

// TestAgent runs the agent on Keel's embedded runtime (SQLite, the local
// state machine, the operation protocol), approves the email exactly as
// it was proposed, and checks that it was sent once and recorded once.
func TestAgent(t *testing.T) {
	outbox, err := NewOutbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := keeltest.Start(t, newAgent(sampleOrders(), outbox))

	id := k.StartRun(t, agentName, "Where is my order ord_1001?")
	ap := k.WaitApproval(t, id)
	if ap.Tool != "send_email" || !strings.Contains(string(ap.Args), "ada@example.com") {
		t.Fatalf("approval asked for %s %s, want send_email to ada@example.com", ap.Tool, ap.Args)
	}
	k.Approve(t, id, ap) // by its args hash: changed arguments would need a new approval
	r := k.WaitFor(t, id, "completed")
	if !strings.Contains(r.Output, "ada@example.com") {
		t.Errorf("output %q does not name the customer", r.Output)
	}

	if sent, err := outbox.Sent(); err != nil || len(sent) != 1 || sent[0].To != "ada@example.com" {
		t.Errorf("outbox sent %+v (%v), want one email to ada@example.com", sent, err)
	}
	events := k.Events(t, id)
	for _, typ := range []string{"op_intent", "op_succeeded"} {
		if n := keeltest.Count(events, typ); n != 1 {
			t.Errorf("%d %s events, want 1", n, typ)
		}
	}
}

// TestOutboxIdempotent checks the promise the effect declares: the same
// operation id sends once, and Lookup finds it, also from another Outbox
// on the same directory (another process, after a crash).
func TestOutboxIdempotent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o, err := NewOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := emailArgs{To: "ada@example.com", Subject: "Hello", Body: "Hi."}
	first, err := o.Send(ctx, "op_1", a)
	if err != nil {
		t.Fatal(err)
	}
	restarted, err := NewOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := restarted.Send(ctx, "op_1", a)
	if err != nil {
		t.Fatal(err)
	}
	if sent, err := o.Sent(); err != nil || again.ExternalID != first.ExternalID || len(sent) != 1 {
		t.Errorf("second send answered %+v (first %+v), sent %+v (%v); want the first email, 1 sent", again, first, sent, err)
	}
	if got, found, err := restarted.Lookup(ctx, "op_1"); err != nil || !found || got.ExternalID != first.ExternalID {
		t.Errorf("Lookup(op_1) = %+v, %v, %v; want %+v, true", got, found, err, first)
	}
	if _, found, _ := o.Lookup(ctx, "op_2"); found {
		t.Error("Lookup(op_2) found an email never sent")
	}
	if _, err := o.Send(ctx, "op_3", emailArgs{To: "nobody", Subject: "x", Body: "y"}); err == nil {
		t.Error("Send to a bad address succeeded, want a rejection")
	}
}
