package mcptool_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/keeltest"
)

// liarRounds is how many times each case of TestLyingServerKilledMidCall
// kills keel dev inside the call.
const liarRounds = 5

// liarEnv is the environment of mcpagent calling the fixture's lying
// delete_record over transport ("http" or "stdio"), logging to log.
func liarEnv(t *testing.T, transport, log string, trusted bool, flags ...string) []string {
	t.Helper()
	fx, _ := binaries(t)
	flags = append([]string{"-sleep", "2s"}, flags...)
	env := []string{"MCPAGENT_LIAR=1", "MCPAGENT_LOG=" + log}
	if trusted {
		env = append(env, "MCPAGENT_TRUSTED=1")
	}
	if transport == "http" {
		return append(env, "MCPAGENT_URL="+httpFixture(t, log, flags...))
	}
	return append(env, "MCPAGENT_CMD="+fx, "MCPAGENT_FLAGS="+strings.Join(flags, " "))
}

// waitApplied waits until the fixture's log holds n applications of
// delete_record and returns them.
func waitApplied(t *testing.T, log string, n int) []entry {
	t.Helper()
	for deadline := time.Now().Add(keeltest.HangGuard); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var got []entry
		for _, e := range readLog(t, log) {
			if e.Tool == "delete_record" && e.Kind == "applied" {
				got = append(got, e)
			}
		}
		if len(got) >= n {
			return got
		}
	}
	t.Fatalf("delete_record was not applied %d times", n)
	return nil
}

// TestLyingServerKilledMidCall: delete_record deletes, then sleeps inside
// the call, and claims readOnlyHint and idempotentHint. keel dev is
// SIGKILLed while the call is in flight (the deletion applied, its answer
// not yet back), then restarted, liarRounds times per case.
//
// Untrusted (the default), the claim is not believed: the call runs as
// an effect allowed once per session, under the operation protocol, so
// the restarted dev does not send it again. The run ends needs_human with
// one application, which carried the operation id in _meta; a person
// settles it and the run completes, still with one application. Trusted,
// the claim is the operator's to believe: the call is a read, and the
// restarted dev sends it again (two applications), as documented.
func TestLyingServerKilledMidCall(t *testing.T) {
	if testing.Short() {
		t.Skip("kills keel dev inside MCP calls: not in -short")
	}
	_, agent := binaries(t)
	for _, transport := range []string{"http", "stdio"} {
		for _, trusted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/trusted=%v", transport, trusted), func(t *testing.T) {
				log := filepath.Join(t.TempDir(), "applied.jsonl")
				env := liarEnv(t, transport, log, trusted)
				p := keeltest.StartProgram(t, agent, env...)
				applied := 0
				for round := range liarRounds {
					id := p.StartRun(t, "mcp", fmt.Sprintf("round %d", round))
					if !trusted {
						ap := p.WaitApproval(t, id)
						if ap.Tool != "fx_delete_record" || ap.Mode != "confirm_once" {
							t.Fatalf("round %d: approval %+v, want fx_delete_record confirm_once", round, ap)
						}
						p.Approve(t, id, ap)
					}
					first := waitApplied(t, log, applied+1)[applied]
					p.Restart(t, env...) // SIGKILL inside the call, then start again
					if trusted {
						p.WaitFor(t, id, "completed")
						if got := len(waitApplied(t, log, applied+2)) - applied; got != 2 {
							t.Fatalf("round %d: a trusted read applied %d times, want 2 (sent again after the kill)", round, got)
						}
						applied += 2
						continue
					}
					if r := p.WaitFor(t, id, "needs_human", "completed"); r.Status != "needs_human" {
						t.Fatalf("round %d: the run is %s with %d applications of an untrusted call, want needs_human with 1",
							round, r.Status, len(waitApplied(t, log, applied+1))-applied)
					}
					var opID string
					for _, e := range p.Events(t, id) {
						if e.Type == "op_needs_human" {
							opID = e.OperationID
						}
					}
					if opID == "" || first.Operation != opID {
						t.Fatalf("round %d: the application carried operation id %q in _meta, the needs_human operation is %q", round, first.Operation, opID)
					}
					settle(t, p, id, opID)
					p.WaitFor(t, id, "completed")
					if got := len(waitApplied(t, log, applied+1)) - applied; got != 1 {
						t.Fatalf("round %d: an untrusted call applied %d times, want 1", round, got)
					}
					applied++
				}
				t.Logf("%d rounds, %d applications", liarRounds, applied)
			})
		}
	}
}

// settle tells Keel, as a person would, that the operation happened.
func settle(t *testing.T, p *keeltest.Program, runID, opID string) {
	t.Helper()
	c, err := client.New(p.URL, p.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(context.Background(), runID, opID, api.SettleRequest{Outcome: "happened",
		Reason: "checked the records table: r-1 is gone"}); err != nil {
		t.Fatalf("settle %s: %v", opID, err)
	}
}
