package compose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

func (b backend) String() string {
	if b == onAWS {
		return "dynamo"
	}
	return "sqlite"
}

// as calls the api function as the IAM caller of the testdata events.
func (w *world) as(t *testing.T, method, path, body string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return w.callAPI(t, gatewayEvent(t, "apigw-v2-post-runs-iam.json", request(method, path, body)))
}

// createResearch creates a research run through the api function.
func (w *world) createResearch(t *testing.T, body string) string {
	t.Helper()
	resp := w.as(t, "POST", "/v1/runs", body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/runs: %d %s", resp.StatusCode, resp.Body)
	}
	var created api.Run
	if err := json.Unmarshal([]byte(resp.Body), &created); err != nil {
		t.Fatal(err)
	}
	return created.RunID
}

// awaitApproval waits until the run's approval has its task token (the
// execution parked in AwaitApproval) and returns it.
func (w *world) awaitApproval(t *testing.T, runID string) run.Approval {
	t.Helper()
	var ap run.Approval
	waitFor(t, "the approval wait", func() (bool, error) {
		aps, err := w.store.ListApprovals(context.Background(), runID)
		if err != nil || len(aps) == 0 {
			return false, err
		}
		ap = aps[0]
		return ap.TaskToken != "", nil
	})
	return ap
}

func (w *world) approve(t *testing.T, runID string, ap run.Approval) {
	t.Helper()
	dec := w.as(t, "POST", "/v1/runs/"+runID+"/approvals/"+ap.ID, `{"decision":"approve","args_hash":"`+ap.ArgsHash+`"}`)
	if dec.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d %s", dec.StatusCode, dec.Body)
	}
}

func (w *world) waitStatus(t *testing.T, runID string, want run.Status) run.Run {
	t.Helper()
	var r run.Run
	waitFor(t, "run "+string(want), func() (bool, error) {
		var err error
		r, err = w.store.GetRun(context.Background(), runID)
		if err != nil {
			return false, err
		}
		if r.Status.Terminal() && r.Status != want {
			return false, fmt.Errorf("run ended %s (%s), want %s", r.Status, r.Error, want)
		}
		return r.Status == want, nil
	})
	return r
}

// Finding 2 of issue #18: a run under the queue policy, awaiting approval,
// gets 120 inputs; after the approval it publishes and then takes the
// inputs in batches that fit one commit each, instead of failing with
// "commit writes N items, over 90". Every input is consumed, each by
// exactly one turn.
func TestQueuedInputDuringApprovalWait(t *testing.T) {
	for _, be := range []backend{onSQLite, onAWS} {
		t.Run(be.String(), func(t *testing.T) {
			w := newWorld(t, be, worldOptions{})
			ctx := context.Background()
			id := w.createResearch(t, `{"agent":"research","input":"Durable agents","input_policy":"queue"}`)
			ap := w.awaitApproval(t, id)
			const n = 120
			for i := range n {
				r := w.as(t, "POST", "/v1/runs/"+id+"/input", fmt.Sprintf(`{"text":"queued input %d"}`, i))
				if r.StatusCode != http.StatusAccepted {
					t.Fatalf("input %d: %d %s", i, r.StatusCode, r.Body)
				}
			}
			w.approve(t, id, ap)
			w.waitStatus(t, id, run.StatusCompleted)

			ins, err := w.store.ListInputs(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(ins) != n {
				t.Fatalf("%d inputs stored, want %d", len(ins), n)
			}
			for _, in := range ins {
				if !in.Consumed {
					t.Fatalf("input %s not consumed", in.ID)
				}
			}
			evs, err := w.store.ReadEvents(ctx, id, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			taken := map[string]int{}
			for _, e := range evs {
				if e.Type != run.EventTurnStarted {
					continue
				}
				var d struct{ Inputs []string }
				if err := json.Unmarshal(e.Data, &d); err != nil {
					t.Fatal(err)
				}
				for _, in := range d.Inputs {
					taken[in]++
				}
			}
			for _, in := range ins {
				if taken[in.ID] != 1 {
					t.Fatalf("input %s started %d turns, want 1", in.ID, taken[in.ID])
				}
			}
		})
	}
}
