package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/mcptool"
	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/keeltest"
)

// liarRounds is how many times each case of TestLyingServerKilledMidCall
// kills keel dev inside the call: 5, or MCPTEST_KILL_ROUNDS for a
// longer run.
func liarRounds(t *testing.T) int {
	if v := os.Getenv("MCPTEST_KILL_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("MCPTEST_KILL_ROUNDS=%q: want a positive number", v)
		}
		return n
	}
	return 5
}

// liarEnv is the environment of mcpagent calling the fixture's lying
// delete_record over transport ("http" or "stdio"), logging to log, the
// fixture run with flags.
func liarEnv(t *testing.T, transport, log string, trusted bool, flags ...string) []string {
	t.Helper()
	fx, _ := binaries(t)
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
	testbin.SkipShort(t, "kills keel dev inside MCP calls")
	_, agent := binaries(t)
	for _, transport := range []string{"http", "stdio"} {
		for _, trusted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/trusted=%v", transport, trusted), func(t *testing.T) {
				log := filepath.Join(t.TempDir(), "applied.jsonl")
				env := liarEnv(t, transport, log, trusted, "-sleep", "2s")
				p := keeltest.StartProgram(t, agent, env...)
				applied, rounds := 0, liarRounds(t)
				for round := range rounds {
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
				t.Logf("%d kills inside the call, %d applications (%d per call)", rounds, applied, applied/rounds)
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

// TestTermsChangeBetweenRuns: while keel dev is up, the server switches
// delete_record from its lie (readOnlyHint, idempotentHint) to the truth
// (destructiveHint). The first run, in a session, ran it under the lie's
// mode (untrusted: an effect allowed once per session, so a person was
// asked once; Trusted: a read, nobody asked). The second run, in the same
// session, lists the new terms and is judged again: a mutating effect, a
// person asked for its exact arguments (the session's grant does not
// cover it), and the mode is recorded with the run's terms.
func TestTermsChangeBetweenRuns(t *testing.T) {
	testbin.SkipShort(t, "runs keel dev")
	_, agent := binaries(t)
	for _, transport := range []string{"http", "stdio"} {
		for _, trusted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/trusted=%v", transport, trusted), func(t *testing.T) {
				log := filepath.Join(t.TempDir(), "applied.jsonl")
				honest := filepath.Join(t.TempDir(), "honest")
				p := keeltest.StartProgram(t, agent, liarEnv(t, transport, log, trusted, "-terms-file", honest)...)
				first := p.StartRun(t, "mcp", "first", keeltest.InSession("ses_terms"))
				if !trusted {
					ap := p.WaitApproval(t, first)
					if ap.Mode != "confirm_once" {
						t.Fatalf("first run: approval mode %s, want confirm_once", ap.Mode)
					}
					p.Approve(t, first, ap)
				}
				p.WaitFor(t, first, "completed")
				if err := os.WriteFile(honest, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				second := p.StartRun(t, "mcp", "second", keeltest.InSession("ses_terms"))
				if r := p.WaitFor(t, second, "awaiting_approval", "completed"); r.Status != "awaiting_approval" {
					t.Fatalf("second run: %s with nobody asked, under the mode judged when keel dev started", r.Status)
				}
				ap := p.WaitApproval(t, second)
				if ap.Tool != "fx_delete_record" || ap.Mode != "mutating" {
					t.Fatalf("second run: approval %+v, want fx_delete_record mutating", ap)
				}
				if m := recordedMode(t, p, second, "delete_record"); m != "mutating" {
					t.Errorf("second run recorded delete_record's mode as %q, want mutating", m)
				}
				p.Approve(t, second, ap)
				p.WaitFor(t, second, "completed")
				if n := len(waitApplied(t, log, 2)); n != 2 {
					t.Errorf("%d applications, want one per run", n)
				}
			})
		}
	}
}

// recordedMode is the mode the run's record of the fixture's tool list
// gives tool.
func recordedMode(t *testing.T, p *keeltest.Program, runID, tool string) string {
	t.Helper()
	tail := filepath.Join("runs", runID)
	var roots []string
	_ = filepath.WalkDir(p.DataDir(), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasSuffix(path, string(filepath.Separator)+tail) {
			roots = append(roots, strings.TrimSuffix(path, tail))
		}
		return nil
	})
	if len(roots) != 1 {
		t.Fatalf("the run's record of the tool list: found it under %v", roots)
	}
	arts, err := artfs.New(roots[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := arts.Get(context.Background(), mcptool.RecordKey(runID, "fx"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Tools []struct{ Name, Mode string }
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	for _, x := range rec.Tools {
		if x.Name == tool {
			return x.Mode
		}
	}
	return ""
}
