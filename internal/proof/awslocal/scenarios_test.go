package awslocal

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// outcome is what a scenario reports for the differential check and the
// printed table: the trace of each of its executions, by name.
type outcome struct {
	Executions []string // names, in start order
	Traces     map[string]Trace
}

// scenario is one played situation, run on a stack of its own.
type scenario struct {
	name string
	opts func(dest *destination) StackOptions
	play func(t *testing.T, s *Stack, dest *destination) outcome
}

// baseEnv is the deploy-time configuration every scenario's functions get:
// the research agent publishes to the test's destination; a short lease
// TTL and step budget (the Lambda deadline less KEEL_STEP_MARGIN) let a
// step recover from a lost sandbox within seconds instead of minutes.
func baseEnv(dest *destination) map[string]string {
	return map[string]string{
		"RESEARCH_PUBLISH": dest.URL,
		"KEEL_LEASE_TTL":   "2s",
		"KEEL_STEP_MARGIN": "890s",
		"KEEL_LOG_LEVEL":   "warn",
	}
}

func createRun(t *testing.T, s *Stack, key string) string {
	t.Helper()
	var created api.Run
	body := `{"agent":"research","input":"What changed in durable execution engines this year?"}`
	if st := s.api(t, http.MethodPost, "/v1/runs", body, key, &created); st != http.StatusCreated {
		t.Fatalf("POST /v1/runs: %d", st)
	}
	var again api.Run
	if st := s.api(t, http.MethodPost, "/v1/runs", body, key, &again); st != http.StatusOK || again.RunID != created.RunID {
		t.Fatalf("repeated POST /v1/runs (same Idempotency-Key): %d, run %q, want 200 and %q", st, again.RunID, created.RunID)
	}
	return created.RunID
}

// awaitApproval waits until the run's approval of publish_report is
// pending with its task token stored (the approval function has run
// under AwaitApproval).
func awaitApproval(t *testing.T, s *Stack, runID string) api.Approval {
	t.Helper()
	return awaitToolApproval(t, s, runID, "publish_report")
}

// awaitToolApproval is awaitApproval for an approval of tool.
func awaitToolApproval(t *testing.T, s *Stack, runID, tool string) api.Approval {
	t.Helper()
	st := s.store(t)
	var ap api.Approval
	waitFor(t, "the approval wait", func() (bool, error) {
		var list struct{ Approvals []api.Approval }
		if s.api(t, http.MethodGet, "/v1/runs/"+runID+"/approvals", "", "", &list) != http.StatusOK || len(list.Approvals) == 0 {
			return false, nil
		}
		ap = list.Approvals[0]
		rec, err := st.GetApproval(context.Background(), runID, ap.ApprovalID)
		return rec.TaskToken != "", err
	})
	if ap.Tool != tool || ap.Status != run.ApprovalPending {
		t.Fatalf("approval %+v, want %s pending", ap, tool)
	}
	return ap
}

func decide(t *testing.T, s *Stack, runID string, ap api.Approval, decision string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"decision": decision, "args_hash": ap.ArgsHash, "reason": "scenario " + decision})
	if st := s.api(t, http.MethodPost, "/v1/runs/"+runID+"/approvals/"+ap.ApprovalID, string(body), "", nil); st != http.StatusOK {
		t.Fatalf("%s: %d", decision, st)
	}
}

// finish waits for the execution to close and returns its trace.
func finish(t *testing.T, s *Stack, name string) Trace {
	t.Helper()
	waitFor(t, "execution "+name+" to close", func() (bool, error) {
		st, err := s.describe(t, name)
		return err == nil && st != "RUNNING", err
	})
	return TraceOf(s.history(t, name))
}

func runStatus(t *testing.T, s *Stack, runID string) api.Run {
	t.Helper()
	var v api.Run
	if st := s.api(t, http.MethodGet, "/v1/runs/"+runID, "", "", &v); st != http.StatusOK {
		t.Fatalf("GET run: %d", st)
	}
	return v
}

// eventCounts counts the run's events by type.
func eventCounts(t *testing.T, s *Stack, runID string) map[run.EventType]int {
	t.Helper()
	evs, err := s.store(t).ReadEvents(context.Background(), runID, 0, 5000)
	if err != nil {
		t.Fatal(err)
	}
	n := map[run.EventType]int{}
	for _, e := range evs {
		n[e.Type]++
	}
	return n
}

func wantClose(t *testing.T, tr Trace, want string) {
	t.Helper()
	if tr.Close != want {
		t.Errorf("execution closed %q, want %q: %s (cause: %s)", tr.Close, want, tr, tr.Cause)
	}
}

func wantPublished(t *testing.T, dest *destination, n int) {
	t.Helper()
	posts, pubs := dest.counts()
	total := 0
	for op, c := range pubs {
		total++
		if c != 1 {
			t.Errorf("operation %s published %d times, want once", op, c)
		}
	}
	if total != n {
		t.Errorf("%d publications (%d POSTs), want %d", total, posts, n)
	}
}

var approveScenario = scenario{
	name: "approve",
	opts: func(d *destination) StackOptions { return StackOptions{Env: baseEnv(d)} },
	play: func(t *testing.T, s *Stack, dest *destination) outcome {
		runID := createRun(t, s, "approve-"+s.Opts.Name)
		ap := awaitApproval(t, s, runID)
		decide(t, s, runID, ap, "approve")
		tr := finish(t, s, runID)
		wantClose(t, tr, "ExecutionSucceeded")
		if v := runStatus(t, s, runID); v.Status != run.StatusCompleted {
			t.Errorf("run %s, want completed", v.Status)
		}
		wantPublished(t, dest, 1)
		n := eventCounts(t, s, runID)
		if n[run.EventApprovalGranted] != 1 || n[run.EventOpSucceeded] != 1 || n[run.EventRunCompleted] != 1 {
			t.Errorf("events %v: want one approval_granted, op_succeeded, run_completed", n)
		}
		return outcome{Executions: []string{runID}, Traces: map[string]Trace{runID: tr}}
	},
}
