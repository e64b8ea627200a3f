package awslocal

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/stepfunctions"
)

// subagentsScenario deploys examples/subagents: the coordinator's run
// creates two child runs; each becomes an execution of its own, named by
// its run id, which the parent's execution starts (StartChild: the step
// role neither holds nor links states:StartExecution, so its decision
// names them); the parent's execution waits in its Wait state, with no
// Lambda running, and looks again; the publisher's effect waits for an
// approval given through the API. No sweep is played until the end, and
// then it starts nothing: an execution named by the run id exists.
//
// The differential compares the children's executions, whose states do
// not depend on timing; the parent's enters Wait as many times as its
// children took, so it is checked here, not compared.
var subagentsScenario = scenario{
	name: subagentsScenarioName,
	opts: func(d *destination) StackOptions {
		env := baseEnv(d)
		env["KEEL_SWEEP_MIN_AGE"] = "1ms" // the test plays EventBridge's rule: no need to wait for runs to age
		return StackOptions{Env: env, Program: "examples/subagents"}
	},
	play: func(t *testing.T, s *Stack, _ *destination) outcome {
		var parent api.Run
		body := `{"agent":"coordinator","input":"Report on Q3"}`
		if st := s.api(t, http.MethodPost, "/v1/runs", body, "subagents-"+s.Opts.Name, &parent); st != http.StatusCreated {
			t.Fatalf("POST /v1/runs: %d", st)
		}
		var kids []api.Run
		waitFor(t, "two child runs", func() (bool, error) {
			var list api.RunList
			if s.api(t, http.MethodGet, "/v1/runs?parent="+parent.RunID, "", "", &list) != http.StatusOK {
				return false, nil
			}
			kids = list.Runs
			return len(kids) == 2, nil
		})
		slices.SortFunc(kids, func(a, b api.Run) int { return cmp.Compare(b.Agent, a.Agent) }) // researcher, publisher
		if kids[0].Agent != "researcher" || kids[1].Agent != "publisher" {
			t.Fatalf("children %s and %s, want researcher and publisher", kids[0].Agent, kids[1].Agent)
		}
		// The parent's execution starts them: no sweep is played.
		waitFor(t, "the children's executions", func() (bool, error) {
			for _, k := range kids {
				if _, err := s.describe(t, stepfunctions.ExecutionName(k.RunID, 0)); err != nil {
					return false, nil
				}
			}
			return true, nil
		})
		pub := kids[1].RunID
		var ap api.Approval
		waitFor(t, "the publisher's approval wait", func() (bool, error) {
			var list struct{ Approvals []api.Approval }
			if s.api(t, http.MethodGet, "/v1/runs/"+pub+"/approvals", "", "", &list) != http.StatusOK || len(list.Approvals) == 0 {
				return false, nil
			}
			ap = list.Approvals[0]
			rec, err := s.store(t).GetApproval(context.Background(), pub, ap.ApprovalID)
			return rec.TaskToken != "", err
		})
		if ap.Tool != "publish_summary" {
			t.Fatalf("approval of %s, want publish_summary", ap.Tool)
		}
		decide(t, s, pub, ap, "approve")
		traces := map[string]Trace{}
		for _, k := range kids {
			traces[k.RunID] = finish(t, s, k.RunID)
			wantClose(t, traces[k.RunID], "ExecutionSucceeded")
		}
		pt := finish(t, s, parent.RunID)
		wantClose(t, pt, "ExecutionSucceeded")
		if n := countState(pt, "StartChild"); n < 2 {
			t.Errorf("the parent's execution entered StartChild %d times, want once per child at least: %s", n, pt)
		}
		if v := runStatus(t, s, parent.RunID); v.Status != run.StatusCompleted {
			t.Errorf("parent %s (%s), want completed", v.Status, v.Error)
		}
		if n := eventCounts(t, s, pub); n[run.EventOpSucceeded] != 1 || n[run.EventApprovalGranted] != 1 {
			t.Errorf("publisher's events %v: want one approval_granted and one op_succeeded", n)
		}
		if n := eventCounts(t, s, parent.RunID); n[run.EventChildStarted] != 2 || n[run.EventChildEnded] != 2 {
			t.Errorf("parent's events %v: want two child_started and two child_ended", n)
		}
		if rep := s.sweepReport(t); len(rep.Repairs) != 0 {
			t.Errorf("the sweep repaired %+v: every run had its execution", rep.Repairs)
		}
		page, err := s.store(t).ListRuns(context.Background(), store.ListRunsQuery{})
		if err != nil || len(page.Runs) != 3 {
			t.Errorf("runs in the table: %d (%v), want the parent and two children", len(page.Runs), err)
		}
		if s.keel == nil { // Keel's executor serves no ListExecutions
			execs, err := s.listExecutions(t)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{parent.RunID, kids[0].RunID, kids[1].RunID}
			slices.Sort(execs)
			slices.Sort(want)
			if !slices.Equal(execs, want) {
				t.Errorf("executions %v, want one per run named by its id %v", execs, want)
			}
		}
		return outcome{Executions: []string{kids[0].RunID, kids[1].RunID}, Traces: traces}
	},
}

// countState is how many times a trace entered state.
func countState(tr Trace, state string) int {
	n := 0
	for _, st := range tr.States {
		if st == state {
			n++
		}
	}
	return n
}
