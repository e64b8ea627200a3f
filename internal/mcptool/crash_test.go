package mcptool_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/proof/crash"
	"github.com/keelrun/keel/internal/testbin"
)

// TestCrashtestMCP: `mcpagent crashtest --all-hits` kills keel dev (SIGKILL) at
// every hit of every fault point of the operation protocol and the
// approval wait, over stdio (the fixture a child of each keel dev) and
// over streamable HTTP (one fixture outliving every kill), and checks
// each run against the fixture's own log through the Count hook. The
// idempotent set_flag, declared as honouring keel/operation_id, is
// applied exactly once in every run; the destructive delete_item is never
// applied twice, and where its outcome was lost the run ends needs_human;
// nor are lookup and delete_record, whose read-only claims an untrusted
// server makes (delete_record's a lie: it deletes).
func TestCrashtestMCP(t *testing.T) {
	testbin.SkipShort(t, "kills keel dev at every fault point")
	_, agent := binaries(t)
	for name, env := range transports(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the two crashtests share nothing; each mostly waits on its kills
			log := filepath.Join(t.TempDir(), "applied.jsonl")
			cmd := exec.Command(agent, "crashtest", "--json", "--all-hits", "--dir", t.TempDir())
			cmd.Env = append(os.Environ(), env(log)...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			var rep crash.ProgramReport
			if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
				t.Fatalf("crashtest --json: %v (%v)\n%s\n%s", jerr, err, out.String(), errb.String())
			}
			if err != nil {
				var why []string
				for _, r := range append([]crash.Result{rep.Baseline}, rep.Rows...) {
					if !r.Pass() {
						why = append(why, fmt.Sprintf("%s (%s): %s", r.Name, r.Status, strings.Join(r.Violations, "; ")))
					}
				}
				t.Fatalf("crashtest failed (%v): %d failed runs:\n%s\n%s", err, rep.Failed(), strings.Join(why, "\n"), errb.String())
			}
			if rep.Kills == 0 || len(rep.Rows) == 0 {
				t.Fatalf("no kills: hits %v", rep.Hits)
			}
			needsHuman, liarRows, liarNeedsHuman := 0, 0, 0
			for _, r := range append([]crash.Result{rep.Baseline}, rep.Rows...) {
				for _, e := range r.Effects {
					switch e.Effect {
					case "fx_set_flag":
						if e.Destination != 1 || e.By != "count" || e.NeedsHuman {
							t.Errorf("%s: set_flag %+v, want applied once, never needs_human", r.Name, e)
						}
					case "fx_lookup", "fx_delete_record":
						// Untrusted read-only claims: effects, never sent
						// again after a kill (delete_record deletes).
						if e.Destination > e.Operations || e.By != "count" {
							t.Errorf("%s: %s %+v, an operation applied more than once", r.Name, e.Effect, e)
						}
						if e.Effect == "fx_delete_record" {
							liarRows++
							if e.NeedsHuman {
								liarNeedsHuman++
							}
						}
					case "fx_delete_item":
						if e.Destination > 1 || e.By != "count" {
							t.Errorf("%s: delete_item %+v, applied more than once", r.Name, e)
						}
						if e.NeedsHuman {
							needsHuman++
							if r.Status != "needs_human" {
								t.Errorf("%s: delete_item's outcome was lost but the run is %s", r.Name, r.Status)
							}
						}
					}
				}
			}
			if needsHuman == 0 {
				t.Errorf("no row lost delete_item's outcome: the kill after its dispatch should have (hits %v)", rep.Hits)
			}
			// A re-send after a kill carried the same operation id: the
			// fixture recognised it and skipped it.
			if n := countLog(readLog(t, log), "set_flag", "skipped"); n == 0 {
				t.Error("no set_flag call was re-sent and deduplicated by its keel/operation_id")
			}
			if liarNeedsHuman == 0 {
				t.Errorf("no row lost delete_record's outcome: the kill after its dispatch should have (hits %v)", rep.Hits)
			}
			t.Logf("%d rows, %d kills, %d ended needs_human over delete_item; delete_record in %d rows, %d of them needs_human, none applied twice",
				len(rep.Rows), rep.Kills, needsHuman, liarRows, liarNeedsHuman)
		})
	}
}
