package main

import (
	"path/filepath"
	"testing"

	"github.com/keelrun/keel/examples/research/agent"
	"github.com/keelrun/keel/keeltest"
)

// TestResearchSurvivesKillAfterDispatch runs the program as a user would —
// its own binary, `dev`, publishing to a directory — and kills it right
// after the report was published and before Keel recorded it: after the
// restart the publication is looked up by operation id, not repeated.
func TestResearchSurvivesKillAfterDispatch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the example's program (make test-go runs it)")
	}
	bin := keeltest.Build(t, ".")
	out := filepath.Join(t.TempDir(), "published")
	publish := "RESEARCH_PUBLISH=dir:" + out
	p := keeltest.StartProgram(t, bin, publish, "KEEL_FAULTPOINT=after_dispatch")
	id := p.StartRun(t, agent.Name, "Write the research report on durable agents.")
	ap := p.WaitApproval(t, id)
	if ap.Tool != "publish_report" {
		t.Fatalf("approval %+v", ap)
	}
	p.Approve(t, id, ap)
	p.WaitExit(t) // the fault point's SIGKILL, right after the publication
	p.Restart(t, publish)
	if r := p.WaitFor(t, id, "completed"); r.Output != "The report is drafted and published." {
		t.Fatalf("run %+v", r)
	}
	n, err := agent.DirPublisher{Dir: out}.Count()
	if err != nil || n != 1 {
		t.Fatalf("%d publications, %v: want exactly one", n, err)
	}
	evs := p.Events(t, id)
	if keeltest.Count(evs, "op_intent") != 1 || keeltest.Count(evs, "op_reconciled") != 1 {
		t.Fatalf("events: %d op_intent, %d op_reconciled", keeltest.Count(evs, "op_intent"), keeltest.Count(evs, "op_reconciled"))
	}
}
