package compose_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/aws/states"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/testbin"
)

// fargate runs ecs:runTask as the one binary, with the environment the
// CDK gives the container (KEEL_ROLE=task, KEEL_TABLE, KEEL_BUCKET) plus
// the AWS settings that point it at the test endpoint; the state machine
// adds KEEL_RUN_ID and KEEL_TASK_TOKEN as container overrides.
//
// The one binary is the stock program (cmd/keel: keel.Main with the
// research agent), as ECS would run the image; testbin builds it once.
func fargate(t *testing.T) func(w *world) states.TaskRunner {
	bin := testbin.Keel(t)
	return func(w *world) states.TaskRunner {
		r := &states.ExecTaskRunner{Command: bin, Stdout: testWriter{t}, Stderr: testWriter{t}, Env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + w.dir,
			"KEEL_ROLE=task", "KEEL_TABLE=" + table, "KEEL_BUCKET=" + bucket,
			"RESEARCH_PUBLISH=dir:" + filepath.Join(w.dir, "published"),
			"KEEL_SPILL_TOOLS=analyze_documents",
			"AWS_ENDPOINT_URL=" + w.url, "AWS_REGION=us-east-1",
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
			"AWS_CONFIG_FILE=" + filepath.Join(w.dir, "no-aws-config"),
			"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(w.dir, "no-aws-credentials"),
			"AWS_EC2_METADATA_DISABLED=true",
			"KEEL_LOG_LEVEL=warn",
		}}
		t.Cleanup(r.Wait)
		return r
	}
}

// TestResearchRunOnAWSBackends drives the reference research run through
// the AWS entrypoints on DynamoDB and S3: created through the api function
// from an API Gateway event, stepped by the step function under
// run.asl.json, spilled to the one binary as the Fargate task (KEEL_ROLE=task) for analyze_documents,
// parked on the approval (the approval function stores the task token),
// approved through the api function (which answers the token through the
// Step Functions API), published exactly once and finalized.
func TestResearchRunOnAWSBackends(t *testing.T) {
	w := newWorld(t, onAWS, worldOptions{
		extraEnv: map[string]string{"KEEL_SPILL_TOOLS": "analyze_documents"},
		tasks:    fargate(t),
	})
	ctx := context.Background()

	t.Logf("world ready")
	post := readJSON(t, "apigw-v2-post-runs-iam.json")
	resp := w.callAPI(t, post)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/runs: %d %s", resp.StatusCode, resp.Body)
	}
	var created api.Run
	if err := json.Unmarshal([]byte(resp.Body), &created); err != nil {
		t.Fatal(err)
	}
	const owner = "arn:aws:sts::123456789012:assumed-role/KeelOperators/alice"
	if got, _ := w.store.GetRun(ctx, created.RunID); got.Owner != owner {
		t.Fatalf("run owner %q, want the IAM caller %q", got.Owner, owner)
	}
	// The same Idempotency-Key again: the same run, 200.
	if again := w.callAPI(t, post); again.StatusCode != http.StatusOK || !strings.Contains(again.Body, created.RunID) {
		t.Fatalf("repeat POST: %d %s", again.StatusCode, again.Body)
	}

	as := func(method, path, body string) events.APIGatewayV2HTTPResponse {
		return w.callAPI(t, gatewayEvent(t, "apigw-v2-post-runs-iam.json", request(method, path, body)))
	}
	var approvals struct{ Approvals []api.Approval }
	waitFor(t, "the approval", func() (bool, error) {
		r := as("GET", "/v1/runs/"+created.RunID+"/approvals", "")
		if r.StatusCode != http.StatusOK {
			return false, &apiError{r}
		}
		if err := json.Unmarshal([]byte(r.Body), &approvals); err != nil {
			return false, err
		}
		if len(approvals.Approvals) == 0 {
			return false, nil
		}
		// The approval function has run once the token is attached.
		ap, err := w.store.GetApproval(ctx, created.RunID, approvals.Approvals[0].ApprovalID)
		return ap.TaskToken != "", err
	})
	ap := approvals.Approvals[0]
	t.Logf("approval %s waiting", ap.ApprovalID)
	if ap.Tool != "publish_report" || ap.Status != run.ApprovalPending {
		t.Fatalf("approval %+v", ap)
	}
	if st, _ := w.describe(t, created.RunID, machineName); st != "RUNNING" {
		t.Fatalf("execution %s while waiting for a person", st)
	}

	dec := as("POST", "/v1/runs/"+created.RunID+"/approvals/"+ap.ApprovalID, `{"decision":"approve","args_hash":"`+ap.ArgsHash+`"}`)
	if dec.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d %s", dec.StatusCode, dec.Body)
	}
	waitFor(t, "the execution to end", func() (bool, error) {
		st, _ := w.describe(t, created.RunID, machineName)
		return st != "RUNNING", nil
	})
	if st, out := w.describe(t, created.RunID, machineName); st != "SUCCEEDED" {
		t.Fatalf("execution %s %s", st, out)
	}
	t.Logf("run %s done", created.RunID)

	r := as("GET", "/v1/runs/"+created.RunID, "")
	var view api.Run
	if err := json.Unmarshal([]byte(r.Body), &view); err != nil || view.Status != run.StatusCompleted {
		t.Fatalf("run: %d %s (%v)", r.StatusCode, r.Body, err)
	}
	pubs, _ := filepath.Glob(filepath.Join(w.dir, "published", "*.md"))
	if len(pubs) != 1 {
		t.Fatalf("%d publications, want exactly 1: %v", len(pubs), pubs)
	}

	// The whole log, as a buffered SSE answer: it ends with "end" because
	// the run is terminal.
	sse := w.callAPI(t, gatewayEvent(t, "apigw-v2-post-runs-iam.json", func(ev *events.APIGatewayV2HTTPRequest) {
		request("GET", "/v1/runs/"+created.RunID+"/events", "")(ev)
		ev.Headers["accept"] = "text/event-stream"
	}))
	if sse.StatusCode != http.StatusOK || sse.IsBase64Encoded || !strings.Contains(sse.Headers["Content-Type"], "text/event-stream") ||
		!strings.Contains(sse.Body, "event: end") {
		t.Fatalf("SSE: %d %v %.300s", sse.StatusCode, sse.Headers, sse.Body)
	}
	evs, err := w.store.ReadEvents(ctx, created.RunID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[run.EventType]int{}
	owners := map[string]bool{}
	for _, e := range evs {
		seen[e.Type]++
		if e.Type == run.EventLeaseAcquired {
			var d struct{ Owner string }
			_ = json.Unmarshal(e.Data, &d)
			owners[strings.SplitN(d.Owner, "/", 2)[0]] = true
		}
	}
	for _, want := range []run.EventType{run.EventRunSpilled, run.EventApprovalRequested, run.EventApprovalGranted,
		run.EventOpIntent, run.EventOpSucceeded, run.EventRunCompleted} {
		if seen[want] == 0 {
			t.Errorf("no %s event; saw %v", want, seen)
		}
	}
	if seen[run.EventOpSucceeded] != 1 {
		t.Errorf("%d op_succeeded events, want 1", seen[run.EventOpSucceeded])
	}
	if !owners["lambda"] || !owners["fargate"] {
		t.Errorf("lease owners %v: want steps by the step function and by the Fargate task", owners)
	}
}

type apiError struct {
	r events.APIGatewayV2HTTPResponse
}

func (e *apiError) Error() string { return e.r.Body }
