package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/keelrun/keel/examples/triage/agent"
	"github.com/keelrun/keel/examples/triage/tickets"
	"github.com/keelrun/keel/keeltest"
)

// token is the ticket service's secret in these tests: it must reach the
// service and appear in no event.
const token = "tk_live_triage_5f1b7c0e9a"

// TestTriageSurvivesKillAfterDispatch runs the program's dev in a child
// process that SIGKILLs itself right after update_ticket's dispatch
// returned and before Keel recorded its outcome. The ticket service runs
// in the test's process and outlives the kill. On restart Keel reconciles
// the pending update: the service promises idempotency by key but offers
// no lookup, so Keel sends the same update again with the same operation
// id, and the service applies it once.
func TestTriageSurvivesKillAfterDispatch(t *testing.T) {
	svc, err := tickets.NewServer(token, tickets.SampleData())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc)
	t.Cleanup(hs.Close)
	env := []string{"TRIAGE_TICKETS_URL=" + hs.URL, "TRIAGE_TICKETS_TOKEN=" + token}

	bin := keeltest.Build(t, ".")
	p := keeltest.StartProgram(t, bin, append([]string{"KEEL_FAULTPOINT=after_dispatch"}, env...)...)
	id := p.StartRun(t, agent.Name, "Triage ticket T-1001")

	// read_customer first: private data, allowed once for the session.
	ap := p.WaitApproval(t, id)
	if ap.Tool != "read_customer" || ap.Mode != "confirm_once" || string(ap.Args) != `{"customer_id":"c-17"}` {
		t.Fatalf("first approval %+v (args %s), want read_customer of c-17, confirm_once", ap, ap.Args)
	}
	p.Approve(t, id, ap)

	// Then the exact update.
	ap = p.WaitApproval(t, id)
	var args agent.UpdateArgs
	if err := json.Unmarshal(ap.Args, &args); err != nil {
		t.Fatalf("update approval args %s: %v", ap.Args, err)
	}
	if ap.Tool != "update_ticket" || ap.Mode != "mutating" || args.TicketID != "T-1001" || args.Status != "pending" || !strings.HasPrefix(args.Reply, "Hello Ada,") {
		t.Fatalf("second approval %+v (args %s), want update_ticket of T-1001 to pending, mutating", ap, ap.Args)
	}
	if n := len(svc.Applied()); n != 0 {
		t.Fatalf("%d updates applied before the approval", n)
	}
	p.Approve(t, id, ap)

	// The fault point kills the program once the service has answered.
	p.WaitExit(t)
	applied := svc.Applied()
	if len(applied) != 1 {
		t.Fatalf("after the kill: %d updates applied, want 1", len(applied))
	}
	key := applied[0].Key
	if n := svc.Requests(key); n != 1 {
		t.Fatalf("after the kill: %d requests with key %s, want 1", n, key)
	}

	p.Restart(t, env...)
	r := p.WaitFor(t, id, "completed")
	if !strings.HasPrefix(r.Output, "T-1001 is pending") {
		t.Fatalf("output %q", r.Output)
	}

	// Exactly one effect: the redispatch carried the same key.
	if got := svc.Applied(); len(got) != 1 || got[0] != applied[0] {
		t.Fatalf("applied %+v, want only %+v", got, applied[0])
	}
	if n := svc.Requests(key); n != 2 {
		t.Fatalf("%d requests with key %s, want 2 (the dispatch and its redispatch)", n, key)
	}
	if tk, _ := svc.Ticket("T-1001"); tk.Status != tickets.StatusPending || len(tk.Replies) != 1 {
		t.Fatalf("ticket %+v, want pending with one reply", tk)
	}

	evs := p.Events(t, id)
	types := make([]string, len(evs))
	for i, e := range evs {
		types[i] = e.Type
	}
	t.Logf("events: %s", strings.Join(types, " "))
	if n := keeltest.Count(evs, "op_intent"); n != 1 {
		t.Errorf("%d op_intent, want 1", n)
	}
	if n := keeltest.Count(evs, "approval_granted"); n != 2 {
		t.Errorf("%d approval_granted, want 2", n)
	}
	var reconciled []keeltest.Event
	for _, e := range evs {
		switch e.Type {
		case "op_intent":
			if e.OperationID != key {
				t.Errorf("op_intent names operation %s, the service saw key %s", e.OperationID, key)
			}
		case "op_reconciled":
			reconciled = append(reconciled, e)
		}
	}
	if len(reconciled) != 1 {
		t.Fatalf("%d op_reconciled, want 1", len(reconciled))
	}
	var how struct {
		How string `json:"how"`
	}
	if err := json.Unmarshal(reconciled[0].Data, &how); err != nil || how.How != "redispatched" || reconciled[0].OperationID != key {
		t.Errorf("op_reconciled %s (operation %s), want how=redispatched for %s", reconciled[0].Data, reconciled[0].OperationID, key)
	}
	if n := keeltest.Count(evs, "op_needs_human"); n != 0 {
		t.Errorf("%d op_needs_human", n)
	}
	assertNoSecret(t, evs, p.Output())
}

// assertNoSecret fails if the token appears in any event (type, operation
// id or data) or in the program's output.
func assertNoSecret(t *testing.T, evs []keeltest.Event, output string) {
	t.Helper()
	all, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(all, []byte(token)) {
		t.Errorf("the ticket service's token is in the event log")
	}
	if strings.Contains(output, token) {
		t.Errorf("the ticket service's token is in the program's output")
	}
}

// TestMainRefusesBadEnv: a missing or malformed variable is reported by
// name before anything starts, with exit status 2.
func TestMainRefusesBadEnv(t *testing.T) {
	bin := keeltest.Build(t, ".")
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{name: "no URL", env: []string{"TRIAGE_TICKETS_TOKEN=" + token}, want: "TRIAGE_TICKETS_URL is not set"},
		{name: "no token", env: []string{"TRIAGE_TICKETS_URL=http://127.0.0.1:8181"}, want: "TRIAGE_TICKETS_TOKEN is not set"},
		{name: "not a URL", env: []string{"TRIAGE_TICKETS_URL=tickets.local", "TRIAGE_TICKETS_TOKEN=" + token}, want: `TRIAGE_TICKETS_URL "tickets.local"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "dev", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0")
			cmd.Env = append(cleanEnv(), tc.env...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want status 2; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output %q does not say %q", out, tc.want)
			}
			if strings.Contains(string(out), token) {
				t.Fatalf("output %q quotes the token", out)
			}
		})
	}
}

// cleanEnv is the test's environment without TRIAGE_* variables.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRIAGE_") {
			out = append(out, kv)
		}
	}
	return out
}
