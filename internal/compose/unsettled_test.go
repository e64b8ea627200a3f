package compose_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestNoEndOverUnsettled replays issue #34 on both stores through the
// deployed functions. A killed worker leaves an operation pending (its
// intent recorded, the destination may have applied it) and a live lease:
//
//   - the Step function finds the lease held and returns a busy wait, not
//     an error whose retries could run out into Finalize;
//   - Finalize with an error does not fail the run over that operation: it
//     ends it needs_human naming the operation, which is marked so;
//   - a needs_human run is not continued by any Step, and the store gives
//     no worker its lease;
//   - a person's cancel ends it, recorded with who.
func TestNoEndOverUnsettled(t *testing.T) {
	for _, be := range []backend{onSQLite, onAWS} {
		t.Run(be.String(), func(t *testing.T) {
			w := newWorld(t, be, worldOptions{})
			ctx := context.Background()
			r := createRun(t, w.store, fixtureRun, iamARN)
			const ttl = 1500 * time.Millisecond
			r, err := w.store.AcquireLease(ctx, r.ID, "killed-predecessor", ttl)
			if err != nil {
				t.Fatal(err)
			}
			op := run.Operation{ID: "op_x1", PlanItemID: "item_x1", Tool: "publish_report", Destination: "publication", ArgsHash: "h"}
			if _, err := w.store.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token,
				Run:           &store.RunPatch{Status: run.StatusRunning},
				NewOperations: []run.Operation{op},
				Events:        []run.Event{{Type: run.EventOpIntent, PlanItemID: op.PlanItemID, OperationID: op.ID}}}); err != nil {
				t.Fatal(err)
			}

			// 1. Contention is a wait.
			out, err := lambda.NewHandler(w.step.Handle).Invoke(ctx, []byte(`{"run_id":"`+fixtureRun+`"}`))
			var d harness.Decision
			if err != nil || json.Unmarshal(out, &d) != nil || d.Next != harness.NextWait || !d.Busy || d.WaitSeconds < 1 || d.WaitSeconds > 3 {
				t.Fatalf("step on a leased run: %s, %v; want a busy wait of about the lease's 1.5s", out, err)
			}

			// 2. Finalize while the lease lives: retried, the run untouched.
			fin := lambda.NewHandler(w.finalize.Handle)
			payload := []byte(`{"run_id":"` + fixtureRun + `","decision":{"next":"continue"},` +
				`"error":{"Error":"RetryableError","Cause":"retryable: store unavailable"}}`)
			if _, err := fin.Invoke(ctx, payload); err == nil || errorType(err) != "RetryableError" {
				t.Fatalf("finalize during a live lease: %v, want RetryableError", err)
			}
			if got := w.runNow(t); got.Status != run.StatusRunning {
				t.Fatalf("after a refused finalize the run is %s", got.Status)
			}

			// 3. Finalize after the lease: needs_human naming the operation.
			time.Sleep(ttl + 200*time.Millisecond)
			out, err = fin.Invoke(ctx, payload)
			if err != nil || !strings.Contains(string(out), `"status":"needs_human"`) {
				t.Fatalf("finalize over a pending operation: %s %v, want needs_human", out, err)
			}
			got := w.runNow(t)
			if got.Status != run.StatusNeedsHuman || !strings.Contains(got.Error, "op_x1") {
				t.Fatalf("run %s %q, want needs_human naming op_x1", got.Status, got.Error)
			}
			ops, err := w.store.ListOperations(ctx, fixtureRun, false)
			if err != nil || len(ops) != 1 || ops[0].Status != run.OpNeedsHuman {
				t.Fatalf("operations %+v %v, want op_x1 needs_human", ops, err)
			}
			evs := w.events(t)
			if countEvents(evs, run.EventRunFailed) != 0 || countEvents(evs, run.EventOpNeedsHuman) != 1 {
				t.Fatalf("events %v: want op_needs_human and no run_failed", typesOf(evs))
			}
			seen := len(evs)

			// 4. Nobody moves it on without a person.
			if _, err := w.store.AcquireLease(ctx, fixtureRun, "a-restarted-worker", time.Minute); !errors.Is(err, store.ErrNeedsHuman) {
				t.Fatalf("acquire on needs_human: %v, want ErrNeedsHuman", err)
			}
			out, err = lambda.NewHandler(w.step.Handle).Invoke(ctx, []byte(`{"run_id":"`+fixtureRun+`"}`))
			if err != nil || !strings.Contains(string(out), `"next":"needs_human"`) {
				t.Fatalf("step on needs_human: %s %v", out, err)
			}
			if evs := w.events(t); len(evs) != seen {
				t.Fatalf("a step on a needs_human run wrote %v", typesOf(evs[seen:]))
			}

			// 5. A person's cancel is the decision.
			resp := w.as(t, "POST", "/v1/runs/"+fixtureRun+"/cancel", "")
			if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
				t.Fatalf("cancel: %d %s", resp.StatusCode, resp.Body)
			}
			if got := w.runNow(t); got.Status != run.StatusCancelled {
				t.Fatalf("after a person's cancel: %s", got.Status)
			}
			evs = w.events(t)
			last := evs[len(evs)-1]
			if last.Type != run.EventRunCancelled || !strings.Contains(string(last.Data), "alice") {
				t.Fatalf("last event %s %s, want run_cancelled by the caller", last.Type, last.Data)
			}
		})
	}
}

func (w *world) runNow(t *testing.T) run.Run {
	t.Helper()
	r, err := w.store.GetRun(context.Background(), fixtureRun)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (w *world) events(t *testing.T) []run.Event {
	t.Helper()
	evs, err := w.store.ReadEvents(context.Background(), fixtureRun, 0, store.MaxEventsPerPage)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func countEvents(evs []run.Event, typ run.EventType) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func typesOf(evs []run.Event) []run.EventType {
	out := make([]run.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// TestSettleContinuesTheRun: on both stores, a person settles the
// operation a run stopped on through the api function; the run leaves
// needs_human and a new execution drives it on (ContinueRun), without
// waiting for the sweeper.
func TestSettleContinuesTheRun(t *testing.T) {
	for _, be := range []backend{onSQLite, onAWS} {
		t.Run(be.String(), func(t *testing.T) {
			w := newWorld(t, be, worldOptions{})
			ctx := context.Background()
			r := createRun(t, w.store, fixtureRun, iamARN)
			r, err := w.store.AcquireLease(ctx, r.ID, "worker", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			op := run.Operation{ID: "op_s1", PlanItemID: "item_s1", Tool: "publish_report", Destination: "publication", ArgsHash: "h"}
			if _, err := w.store.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token,
				Run: &store.RunPatch{Status: run.StatusRunning}, NewOperations: []run.Operation{op}}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.store.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token,
				Run:              &store.RunPatch{Status: run.StatusNeedsHuman, ReleaseLease: true},
				OperationUpdates: []store.OperationUpdate{{ID: op.ID, Status: run.OpNeedsHuman, Error: "unknown"}},
				Events:           []run.Event{{Type: run.EventRunNeedsHuman}}}); err != nil {
				t.Fatal(err)
			}
			resp := w.as(t, "POST", "/v1/runs/"+fixtureRun+"/operations/op_s1/settle",
				`{"outcome":"happened","external_id":"post-1","reason":"the publication server shows post-1 for it"}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("settle: %d %s", resp.StatusCode, resp.Body)
			}
			// The research run goes on from scratch and asks to publish.
			w.awaitApproval(t, fixtureRun)
			evs := w.events(t)
			settled := -1
			for i, e := range evs {
				if e.Type == run.EventOpSettled {
					settled = i
				}
			}
			if settled < 0 || countEvents(evs[settled:], run.EventLeaseAcquired) == 0 {
				t.Fatalf("events %v: want op_settled, then a worker taking the run", typesOf(evs))
			}
		})
	}
}
