package api_test

import (
	"context"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
)

// TestInterruptWithdrawsPendingApproval is issue #32 item 9: input under
// the interrupt policy during an approval wait stops the pending effect:
// its approval is denied (nothing of it has happened yet) and the wait
// woken, so the run takes the input instead of running a stale action.
func TestInterruptWithdrawsPendingApproval(t *testing.T) {
	e := newEnv(t, nil)
	r := e.newRun("alice", run.InputInterrupt)
	a := e.awaitApproval(r.ID, `{"title":"old plan"}`)
	if code, _, body := e.do("POST", "/v1/runs/"+r.ID+"/input", aliceToken, `{"text":"stop, do this instead"}`, nil); code != 202 {
		t.Fatalf("input: %d %s", code, body)
	}
	got, err := e.store.GetApproval(context.Background(), r.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != run.ApprovalDenied || got.Reason == "" {
		t.Fatalf("approval after interrupting input: %s %q, want denied with a reason", got.Status, got.Reason)
	}
	if calls := e.resumer.Calls(); len(calls) != 1 || calls[0].ID != a.ID {
		t.Fatalf("resumed %v, want the approval's wait woken once", calls)
	}
	// Under queue the approval waits for its person.
	q := e.newRun("alice", run.InputQueue)
	qa := e.awaitApproval(q.ID, `{"title":"plan"}`)
	if code, _, body := e.do("POST", "/v1/runs/"+q.ID+"/input", aliceToken, `{"text":"later"}`, nil); code != 202 {
		t.Fatalf("input: %d %s", code, body)
	}
	if got, _ := e.store.GetApproval(context.Background(), q.ID, qa.ID); got.Status != run.ApprovalPending {
		t.Fatalf("queue policy: approval %s, want pending", got.Status)
	}
}

// TestInterruptKeepsALimitPause is issue #40 item 3 at the API: a pause
// at a limit is a person's decision about the budget, not a tool call
// input interrupts. Input under the interrupt policy is stored and the
// raise stays pending, its wait not woken (the run would fail as stopped
// by a person); the raise then still works.
func TestInterruptKeepsALimitPause(t *testing.T) {
	e := newEnv(t, nil)
	r, ap := e.pauseAtLimit(run.InputInterrupt)
	if code, _, body := e.do("POST", "/v1/runs/"+r.ID+"/input", aliceToken, `{"text":"meanwhile, this"}`, nil); code != 202 {
		t.Fatalf("input: %d %s", code, body)
	}
	got, err := e.store.GetApproval(context.Background(), r.ID, ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != run.ApprovalPending {
		t.Fatalf("raise after input: %s %q, want pending", got.Status, got.Reason)
	}
	if calls := e.resumer.Calls(); len(calls) != 0 {
		t.Fatalf("resumed %v, want the pause left waiting", calls)
	}
	ins, err := e.store.ListInputs(context.Background(), r.ID, true)
	if err != nil || len(ins) != 1 || ins[0].Text != "meanwhile, this" {
		t.Fatalf("pending inputs %+v (%v), want the one sent", ins, err)
	}
	if code, _, body := e.do("POST", "/v1/runs/"+r.ID+"/limits", aliceToken, `{"decision":"raise"}`, nil); code != 200 {
		t.Fatalf("raise: %d %s", code, body)
	}
}
