package keeltest_test

import (
	"context"
	"testing"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/keeltest"
)

type noteArgs struct {
	Text string `json:"text" jsonschema:"minLength=1"`
}

// TestStart runs an agent with a confirm-once tool and an effect on the
// embedded runtime: two approvals, one effect, the run completes.
func TestStart(t *testing.T) {
	var sent []string
	agent := keel.Agent{
		Name: "notes",
		Model: keel.ScriptedModel([]byte(`{"turns": [
			{"tool_calls": [{"name": "peek", "args": {"text": "secret"}}]},
			{"tool_calls": [{"name": "send", "args": {"text": "hello"}}]}], "final": "sent"}`)),
		Tools: []keel.Tool{
			keel.ConfirmOnce("peek", "Read a private note.", func(ctx context.Context, a noteArgs) (string, error) { return "ok", nil }),
			keel.Effect("send", "Send a note.", keel.EffectSpec[noteArgs]{
				Promises: keel.IdempotentByKey,
				Dispatch: func(ctx context.Context, opID string, a noteArgs) (keel.Outcome, error) {
					sent = append(sent, opID)
					return keel.Outcome{ExternalID: "n1"}, nil
				},
			}),
		},
	}
	rt := keeltest.Start(t, agent)
	id := rt.StartRun(t, "notes", "send a note", keeltest.InSession("s-1"))
	peek := rt.WaitApproval(t, id)
	if peek.Tool != "peek" || peek.Mode != "confirm_once" {
		t.Fatalf("first approval %+v", peek)
	}
	rt.Approve(t, id, peek)
	send := rt.WaitApproval(t, id)
	if send.Tool != "send" || send.Mode != "mutating" || string(send.Args) != `{"text":"hello"}` {
		t.Fatalf("second approval %+v", send)
	}
	rt.Approve(t, id, send)
	r := rt.WaitFor(t, id, "completed")
	if r.Output != "sent" || len(sent) != 1 {
		t.Fatalf("run %+v, sent %v", r, sent)
	}
	if aps := rt.Approvals(t, id); len(aps) != 2 || aps[0].Status != "approved" || aps[1].Status != "approved" {
		t.Fatalf("approvals %+v", aps)
	}
	// The grant of peek holds for the session: a second run asks only for send.
	again := rt.StartRun(t, "notes", "again", keeltest.InSession("s-1"))
	if ap := rt.WaitApproval(t, again); ap.Tool != "send" {
		t.Fatalf("second run of the session asked for %s", ap.Tool)
	}
	evs := rt.Events(t, id)
	if keeltest.Count(evs, "op_intent") != 1 || keeltest.Count(evs, "op_succeeded") != 1 || keeltest.Count(evs, "approval_granted") != 2 {
		t.Fatalf("events %+v", evs)
	}
}
