package compose_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/keelrun/keel/internal/aws/sfnclient"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/run"
)

func (w *world) sweeper(t *testing.T) *compose.Sweep {
	t.Helper()
	sw, err := compose.NewSweep(context.Background(), w.deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	sw.MinAge = 0
	return sw
}

// sweep runs one sweep through the sweep role's Lambda handler.
func (w *world) sweep(t *testing.T, sw *compose.Sweep) sweeper.Report {
	t.Helper()
	out, err := invoker(sw.Handle)(context.Background(), json.RawMessage(`{"source":"aws.scheduler"}`))
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	var rep sweeper.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Errors > 0 {
		t.Fatalf("sweep errors: %+v", rep)
	}
	return rep
}

// storedRun stores a run as the API does before StartExecution, as if the
// process died right after CreateRun.
func (w *world) storedRun(t *testing.T) string {
	t.Helper()
	r := run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "arn:aws:sts::123456789012:assumed-role/KeelOperators/alice",
		Agent: "research", Request: "Durable agents", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
	if _, _, err := w.store.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func (w *world) sweptEvents(t *testing.T, runID string) []map[string]any {
	t.Helper()
	evs, err := w.store.ReadEvents(context.Background(), runID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		if e.Type == run.EventRunSwept {
			var d map[string]any
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

func (w *world) stop(t *testing.T, name string) {
	t.Helper()
	if err := w.deps.SFN.StopExecution(context.Background(), sfnclient.ExecutionARN(w.machineARN, name), "Test.Stopped", "stopped by the test"); err != nil {
		t.Fatal(err)
	}
	if st, _ := w.describe(t, name, machineName); st != "ABORTED" {
		t.Fatalf("execution %s after StopExecution", st)
	}
}

func (w *world) publications(t *testing.T) int {
	t.Helper()
	pubs, _ := filepath.Glob(filepath.Join(w.dir, "published", "*.md"))
	return len(pubs)
}

// The sweeper on both stores, through the sweep role's handler, against the
// local executor behind the Step Functions API.
func TestSweeper(t *testing.T) {
	for _, be := range []backend{onSQLite, onAWS} {
		t.Run(be.String(), func(t *testing.T) {
			// Finding 5 of issue #18: a run stored but never started is
			// started (name = run id), and a second sweep finds nothing.
			t.Run("StoredRunIsStarted", func(t *testing.T) {
				w := newWorld(t, be, worldOptions{})
				sw := w.sweeper(t)
				id := w.storedRun(t)
				rep := w.sweep(t, sw)
				if len(rep.Repairs) != 1 || rep.Repairs[0].Action != sweeper.ActionStarted || rep.Repairs[0].NewExecution != id {
					t.Fatalf("report %+v", rep)
				}
				w.approve(t, id, w.awaitApproval(t, id))
				w.waitStatus(t, id, run.StatusCompleted)
				if again := w.sweep(t, sw); len(again.Repairs) != 0 {
					t.Fatalf("second sweep repaired %+v", again.Repairs)
				}
				if sw := w.sweptEvents(t, id); len(sw) != 1 || sw[0]["found"] != "no_execution" || sw[0]["action"] != "started" {
					t.Fatalf("run_swept events %v", sw)
				}
			})
			// Cancelling a run that was never started finishes it as
			// cancelled: the API starts it, and its first Step cancels.
			t.Run("CancelNeverStarted", func(t *testing.T) {
				w := newWorld(t, be, worldOptions{})
				id := w.storedRun(t)
				if r := w.as(t, "POST", "/v1/runs/"+id+"/cancel", ""); r.StatusCode != http.StatusAccepted {
					t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
				}
				w.waitStatus(t, id, run.StatusCancelled)
			})
			// The StopExecution wedge: the execution is stopped while the
			// run waits for approval. The sweeper resumes it in a new
			// generation, which asks again (a new task token); approving
			// then completes the run, with one publication.
			t.Run("StoppedDuringApproval", func(t *testing.T) {
				w := newWorld(t, be, worldOptions{})
				sw := w.sweeper(t)
				id := w.createResearch(t, `{"agent":"research","input":"Durable agents"}`)
				old := w.awaitApproval(t, id)
				w.stop(t, id)
				if rep := w.sweep(t, sw); len(rep.Repairs) != 1 || rep.Repairs[0].Action != sweeper.ActionResumed ||
					rep.Repairs[0].NewExecution != id+"-g1" || rep.Repairs[0].Found != "execution_aborted" {
					t.Fatalf("report %+v", rep)
				}
				var ap run.Approval
				waitFor(t, "the new wait's token", func() (bool, error) {
					var err error
					ap, err = w.store.GetApproval(context.Background(), id, old.ID)
					return ap.TaskToken != "" && ap.TaskToken != old.TaskToken, err
				})
				w.approve(t, id, ap)
				w.waitStatus(t, id, run.StatusCompleted)
				if n := w.publications(t); n != 1 {
					t.Fatalf("%d publications, want 1", n)
				}
				waitFor(t, "generation 1 to end", func() (bool, error) {
					st, _ := w.describe(t, id+"-g1", machineName)
					return st != "RUNNING", nil
				})
				if st, out := w.describe(t, id+"-g1", machineName); st != "SUCCEEDED" {
					t.Fatalf("generation 1 %s %s", st, out)
				}
			})
			// Approved while wedged (approve answers 200, the dead token is
			// nobody's): the resumed execution reads the decision and
			// completes the run.
			t.Run("ApprovedWhileStopped", func(t *testing.T) {
				w := newWorld(t, be, worldOptions{})
				sw := w.sweeper(t)
				id := w.createResearch(t, `{"agent":"research","input":"Durable agents"}`)
				ap := w.awaitApproval(t, id)
				w.stop(t, id)
				w.approve(t, id, ap)
				if rep := w.sweep(t, sw); len(rep.Repairs) != 1 || rep.Repairs[0].Action != sweeper.ActionResumed {
					t.Fatalf("report %+v", rep)
				}
				w.waitStatus(t, id, run.StatusCompleted)
				if n := w.publications(t); n != 1 {
					t.Fatalf("%d publications, want 1", n)
				}
			})
			// An execution that keeps dying is resumed MaxResumes times,
			// then the run is finalized with the reason, and its pending
			// approval is closed.
			t.Run("FinalizedAfterMaxResumes", func(t *testing.T) {
				w := newWorld(t, be, worldOptions{})
				sw := w.sweeper(t)
				sw.MaxResumes = 1
				id := w.createResearch(t, `{"agent":"research","input":"Durable agents"}`)
				old := w.awaitApproval(t, id)
				w.stop(t, id)
				w.sweep(t, sw)
				waitFor(t, "the new wait's token", func() (bool, error) {
					ap, err := w.store.GetApproval(context.Background(), id, old.ID)
					return ap.TaskToken != "" && ap.TaskToken != old.TaskToken, err
				})
				w.stop(t, id+"-g1")
				rep := w.sweep(t, sw)
				if len(rep.Repairs) != 1 || rep.Repairs[0].Action != sweeper.ActionFinalized {
					t.Fatalf("report %+v", rep)
				}
				r := w.waitStatus(t, id, run.StatusFailed)
				if r.Error == "" {
					t.Fatal("finalized without a reason")
				}
				ap, err := w.store.GetApproval(context.Background(), id, old.ID)
				if err != nil || ap.Status != run.ApprovalCancelled {
					t.Fatalf("approval of the finished run: %s %v", ap.Status, err)
				}
				evs, err := w.store.ReadEvents(context.Background(), id, 0, 1000)
				if err != nil {
					t.Fatal(err)
				}
				if last := evs[len(evs)-1]; last.Type != run.EventRunFailed {
					t.Fatalf("last event %s, want run_failed", last.Type)
				}
				if sw := w.sweptEvents(t, id); len(sw) != 2 || sw[1]["action"] != "finalized" {
					t.Fatalf("run_swept events %v", sw)
				}
			})
		})
	}
}
