package compose_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// The ids the Step Functions payloads in testdata name.
const (
	fixtureRun      = "run_0193a1b2c3d4e5f6a7b8c9d0e1f2"
	fixtureApproval = "apr_0193a1b2c3d5a0b1c2d3e4f5a6b7"
	jwtSub          = "user-7f3a"
	iamARN          = "arn:aws:sts::123456789012:assumed-role/KeelOperators/alice"
)

func createRun(t *testing.T, st store.Store, id, owner string) run.Run {
	t.Helper()
	r, _, err := st.CreateRun(context.Background(), run.Run{ID: id, SessionID: "s-" + id, Owner: owner, Agent: "research",
		Request: "what changed?", InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pendingApproval parks fixtureRun on fixtureApproval, as a Step would.
func pendingApproval(t *testing.T, st store.Store) run.Approval {
	t.Helper()
	ctx := context.Background()
	r := createRun(t, st, fixtureRun, iamARN)
	r, err := st.AcquireLease(ctx, r.ID, "test-step", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"title":"weekly"}`)
	h, _ := run.ArgsHash(args)
	ap := run.Approval{ID: fixtureApproval, RunID: r.ID, SessionID: r.SessionID, PlanItemID: "item_1", Tool: "publish_report",
		Mode: run.ModeMutating, Args: args, ArgsHash: h, Status: run.ApprovalPending}
	if _, err := st.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token,
		Run: &store.RunPatch{Status: run.StatusAwaitingApproval, ReleaseLease: true},
		PlanItems: []run.PlanItem{{ID: "item_1", RunID: r.ID, Order: 1, Tool: "publish_report", Args: args, ArgsHash: h,
			Mode: run.ModeMutating, Status: run.PlanAwaitingApproval, CallID: "c1"}},
		NewApprovals: []run.Approval{ap}}); err != nil {
		t.Fatal(err)
	}
	return ap
}

func TestGatewayEvents(t *testing.T) {
	w := newWorld(t, onSQLite, worldOptions{})
	mine := createRun(t, w.store, "run_0193a1b2c3d4aaaaaaaaaaaaaaa1", jwtSub)
	createRun(t, w.store, "run_0193a1b2c3d4aaaaaaaaaaaaaaa2", jwtSub)
	createRun(t, w.store, "run_0193a1b2c3d4aaaaaaaaaaaaaaa3", "someone-else")
	blob := []byte{0x89, 'P', 'N', 'G', 0x00, 0xff, 0xfe, '\n'}
	arts, err := artfs.New(filepath.Join(w.dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := arts.Put(context.Background(), artifact.Key{RunID: mine.ID, CheckpointID: "draft", Name: "chart.png"}, blob); err != nil {
		t.Fatal(err)
	}
	postBody := `{"agent":"research","input":"base64 please"}`

	cases := []struct {
		name   string
		file   string
		edit   func(*events.APIGatewayV2HTTPRequest)
		status int
		check  func(t *testing.T, r events.APIGatewayV2HTTPResponse)
	}{
		{name: "GET with a JWT principal lists only the caller's runs", file: "apigw-v2-get-runs-jwt.json", status: 200,
			check: func(t *testing.T, r events.APIGatewayV2HTTPResponse) {
				var page struct{ Runs []struct{ Owner string } }
				if err := json.Unmarshal([]byte(r.Body), &page); err != nil || len(page.Runs) != 2 {
					t.Fatalf("%s (%v)", r.Body, err)
				}
				for _, run := range page.Runs {
					if run.Owner != jwtSub {
						t.Fatalf("listed a run of %q", run.Owner)
					}
				}
			}},
		{name: "no authorizer is 401", file: "apigw-v2-get-runs-jwt.json", status: 401,
			edit: func(ev *events.APIGatewayV2HTTPRequest) { ev.RequestContext.Authorizer = nil }},
		{name: "a JWT without sub is 401", file: "apigw-v2-get-runs-jwt.json", status: 401,
			edit: func(ev *events.APIGatewayV2HTTPRequest) { delete(ev.RequestContext.Authorizer.JWT.Claims, "sub") }},
		{name: "another principal's run is 404", file: "apigw-v2-post-runs-iam.json", status: 404,
			edit: request("GET", "/v1/runs/"+mine.ID, "")},
		{name: "the owner gets it on a named stage", file: "apigw-v2-get-runs-jwt.json", status: 200,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				ev.RequestContext.Stage = "prod"
				ev.RawPath, ev.RawQueryString = "/prod/v1/runs/"+mine.ID, ""
			},
			check: func(t *testing.T, r events.APIGatewayV2HTTPResponse) {
				if !strings.Contains(r.Body, mine.ID) {
					t.Fatal(r.Body)
				}
			}},
		{name: "a base64 body creates a run", file: "apigw-v2-post-runs-iam.json", status: 201,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				request("POST", "/v1/runs", "")(ev)
				ev.Headers["content-type"] = "application/json"
				ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(postBody)), true
			},
			check: func(t *testing.T, r events.APIGatewayV2HTTPResponse) {
				if !strings.Contains(r.Body, `"base64 please"`) || r.Headers["Location"] == "" {
					t.Fatalf("%v %s", r.Headers, r.Body)
				}
			}},
		{name: "an unknown field is the API's 400", file: "apigw-v2-post-runs-iam.json", status: 400,
			edit: request("POST", "/v1/runs", `{"agent":"research","input":"x","colour":"red"}`),
			check: func(t *testing.T, r events.APIGatewayV2HTTPResponse) {
				if !strings.Contains(r.Body, `"unknown_field"`) || r.Headers["Content-Type"] != "application/json" {
					t.Fatalf("%v %s", r.Headers, r.Body)
				}
			}},
		{name: "an artifact download is returned base64", file: "apigw-v2-get-runs-jwt.json", status: 200,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				ev.RawPath, ev.RawQueryString = "/v1/runs/"+mine.ID+"/artifacts/draft/chart.png", ""
			},
			check: func(t *testing.T, r events.APIGatewayV2HTTPResponse) {
				got, err := base64.StdEncoding.DecodeString(r.Body)
				if !r.IsBase64Encoded || err != nil || string(got) != string(blob) {
					t.Fatalf("base64=%v %q (%v)", r.IsBase64Encoded, r.Body, err)
				}
			}},
		{name: "SSE on a live run answers after StreamMax with a retry hint", file: "apigw-v2-get-runs-jwt.json", status: 200,
			edit: func(ev *events.APIGatewayV2HTTPRequest) {
				ev.RawPath, ev.RawQueryString = "/v1/runs/"+mine.ID+"/events", ""
				ev.Headers["accept"] = "text/event-stream"
			},
			check: func(t *testing.T, r events.APIGatewayV2HTTPResponse) {
				if !strings.HasPrefix(r.Body, "retry: ") || strings.Contains(r.Body, "event: end") {
					t.Fatalf("%q", r.Body)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := w.callAPI(t, gatewayEvent(t, tc.file, tc.edit))
			if r.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", r.StatusCode, tc.status, r.Body)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}

	t.Run("a body that is not base64 is an invocation error", func(t *testing.T) {
		ev := gatewayEvent(t, "apigw-v2-post-runs-iam.json", func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Body, ev.IsBase64Encoded = "%%% not base64", true
		})
		if _, err := lambda.NewHandler(w.api.Handle).Invoke(context.Background(), ev); err == nil {
			t.Fatal("accepted")
		}
	})
}

func TestStepFunction(t *testing.T) {
	payload := readJSON(t, "sfn-step.json")
	t.Run("a fresh run steps to a decision with every field the state machine selects", func(t *testing.T) {
		w := newWorld(t, onSQLite, worldOptions{})
		createRun(t, w.store, fixtureRun, iamARN)
		out, err := lambda.NewHandler(w.step.Handle).Invoke(context.Background(), payload)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatal(err)
		}
		// run.asl.json's ResultSelector reads all five: a missing one
		// fails the state (States.Runtime).
		for _, k := range []string{"next", "approval_id", "wait_seconds", "approval_timeout_seconds", "error"} {
			if _, ok := d[k]; !ok {
				t.Fatalf("decision %s has no %q", out, k)
			}
		}
		if d["next"] == "" {
			t.Fatalf("decision %s", out)
		}
	})
	t.Run("a run leased by another worker is a busy wait, not an error", func(t *testing.T) {
		w := newWorld(t, onSQLite, worldOptions{})
		createRun(t, w.store, fixtureRun, iamARN)
		if _, err := w.store.AcquireLease(context.Background(), fixtureRun, "another-worker", time.Hour); err != nil {
			t.Fatal(err)
		}
		// Retries of an error run out and end in Finalize: contention must
		// never be one. The state machine's Wait state takes it.
		out, err := lambda.NewHandler(w.step.Handle).Invoke(context.Background(), payload)
		if err != nil {
			t.Fatalf("step on a leased run: %v (errorType %q), want a wait decision", err, errorType(err))
		}
		var d harness.Decision
		if err := json.Unmarshal(out, &d); err != nil || d.Next != harness.NextWait || d.WaitSeconds < 1 || !d.Busy {
			t.Fatalf("decision %s (%v), want a busy wait", out, err)
		}
	})
	t.Run("an empty payload is an error Step Functions does not retry", func(t *testing.T) {
		w := newWorld(t, onSQLite, worldOptions{})
		_, err := lambda.NewHandler(w.step.Handle).Invoke(context.Background(), []byte(`{}`))
		if err == nil || errorType(err) == "RetryableError" || errorType(err) == "FencedError" {
			t.Fatalf("errorType %q (%v)", errorType(err), err)
		}
	})
}

// awaitMachine is AwaitApproval alone: a real task token for the approval
// function, from the same executor `keel dev` uses.
const awaitMachine = `{"StartAt": "Await", "States": {"Await": {
  "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
  "Parameters": {"FunctionName": "keel-approval",
    "Payload": {"run_id.$": "$.run_id", "approval_id.$": "$.approval_id", "task_token.$": "$$.Task.Token"}},
  "End": true}}}`

func TestApprovalFunction(t *testing.T) {
	ctx := context.Background()
	start := func(t *testing.T, w *world, name string) {
		t.Helper()
		in := `{"run_id":"` + fixtureRun + `","approval_id":"` + fixtureApproval + `"}`
		if _, err := w.raw.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(w.exec.StateMachineARN("await")),
			Name: aws.String(name), Input: aws.String(in)}); err != nil {
			t.Fatal(err)
		}
	}
	ended := func(t *testing.T, w *world, name string) string {
		var out string
		waitFor(t, "the wait to end", func() (bool, error) {
			st, o := w.describe(t, name, "await")
			out = o
			return st == "SUCCEEDED", nil
		})
		return out
	}

	t.Run("token first: the API's decision answers it", func(t *testing.T) {
		w := newWorld(t, onSQLite, worldOptions{machines: map[string]string{"await": awaitMachine}})
		ap := pendingApproval(t, w.store)
		start(t, w, "wait-1")
		waitFor(t, "the token on the approval", func() (bool, error) {
			got, err := w.store.GetApproval(ctx, fixtureRun, ap.ID)
			return got.TaskToken != "", err
		})
		if st, _ := w.describe(t, "wait-1", "await"); st != "RUNNING" {
			t.Fatalf("the wait ended before a decision: %s", st)
		}
		r := w.callAPI(t, gatewayEvent(t, "apigw-v2-post-runs-iam.json",
			request("POST", "/v1/runs/"+fixtureRun+"/approvals/"+ap.ID, `{"decision":"approve","args_hash":"`+ap.ArgsHash+`"}`)))
		if r.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", r.StatusCode, r.Body)
		}
		if out := ended(t, w, "wait-1"); !strings.Contains(out, `"approved"`) {
			t.Fatalf("output %s", out)
		}
	})
	t.Run("decision first: the function answers at once", func(t *testing.T) {
		w := newWorld(t, onSQLite, worldOptions{machines: map[string]string{"await": awaitMachine}})
		ap := pendingApproval(t, w.store)
		if _, err := w.store.DecideApproval(ctx, store.Decision{RunID: fixtureRun, ApprovalID: ap.ID, Approve: false,
			ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
			t.Fatal(err)
		}
		start(t, w, "wait-2")
		if out := ended(t, w, "wait-2"); !strings.Contains(out, `"denied"`) {
			t.Fatalf("output %s", out)
		}
	})

	payload := readJSON(t, "sfn-approval.json")
	t.Run("a token Step Functions no longer knows is not an error", func(t *testing.T) {
		// The wait timed out or was answered already: nothing to resume.
		w := newWorld(t, onSQLite, worldOptions{})
		ap := pendingApproval(t, w.store)
		if _, err := w.store.DecideApproval(ctx, store.Decision{RunID: fixtureRun, ApprovalID: ap.ID, Approve: true,
			ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
			t.Fatal(err)
		}
		out, err := lambda.NewHandler(w.approval.Handle).Invoke(ctx, payload)
		if err != nil || string(out) != `{"attached":true}` {
			t.Fatalf("%s %v", out, err)
		}
	})
	t.Run("an approval the store does not have is RetryableError", func(t *testing.T) {
		w := newWorld(t, onSQLite, worldOptions{})
		createRun(t, w.store, fixtureRun, iamARN)
		_, err := lambda.NewHandler(w.approval.Handle).Invoke(ctx, payload)
		if errorType(err) != "RetryableError" {
			t.Fatalf("errorType %q (%v)", errorType(err), err)
		}
	})
}

// TestFinalizeFunction: the finalize role records the failure and, built
// by the same composition root as keel dev's, writes the run's debug
// bundle on AWS too (it once was built without records or artifacts): the
// run is stepped by the Step function to its approval, the approval wait
// times out, and the bundle archive holds all six files.
func TestFinalizeFunction(t *testing.T) {
	const canary = "sk-ant-canary-0123456789abcdef"
	for _, be := range []backend{onSQLite, onAWS} {
		w := newWorld(t, be, worldOptions{extraEnv: map[string]string{"ANTHROPIC_API_KEY": canary}})
		createRun(t, w.store, fixtureRun, iamARN)
		for i := 0; ; i++ {
			out, err := lambda.NewHandler(w.step.Handle).Invoke(context.Background(), readJSON(t, "sfn-step.json"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), `"next":"approval"`) {
				break
			}
			if i > 20 {
				t.Fatalf("no approval after %d steps: %s", i, out)
			}
		}
		h := lambda.NewHandler(w.finalize.Handle)
		out, err := h.Invoke(context.Background(), readJSON(t, "sfn-finalize.json"))
		if err != nil {
			t.Fatal(err)
		}
		var fo struct {
			DebugBundle string `json:"debug_bundle"`
		}
		if err := json.Unmarshal(out, &fo); err != nil || !strings.HasSuffix(fo.DebugBundle, "/debug-bundle-failed.tar.gz") ||
			!strings.Contains(string(out), `"status":"failed","failed":true`) {
			t.Fatalf("output %s (%v)", out, err)
		}
		k, _ := artifact.ParsePath(fo.DebugBundle)
		data, _, err := w.arts.Get(context.Background(), k)
		if err != nil {
			t.Fatalf("debug bundle: %v", err)
		}
		files, err := telemetry.ReadArchive(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != len(telemetry.Files) {
			t.Fatalf("%d files in the bundle, want %v", len(files), telemetry.Files)
		}
		for name, want := range map[string]string{
			"events.jsonl":      "States.Timeout",
			"checkpoints.jsonl": `"checkpoint_id"`,
			"last_state.json":   `"open_approvals"`,
			"trace.json":        `"execute_tool collect_documents"`,
			"tool_calls.csv":    "ts,tool,input_hash,latency_ms,status,error\n",
			"env.txt":           "AnthropicAPIKey=****",
		} {
			if name == "checkpoints.jsonl" {
				want = `"run_id":"` + fixtureRun + `"`
			}
			if !strings.Contains(string(files[name]), want) {
				t.Errorf("%s (%s) lacks %q:\n%.600s", name, be, want, files[name])
			}
			if strings.Contains(string(files[name]), canary) {
				t.Errorf("%s holds the API key", name)
			}
		}
		if !strings.Contains(string(files["tool_calls.csv"]), ",collect_documents,") {
			t.Errorf("tool_calls.csv:\n%s", files["tool_calls.csv"])
		}
		// The api function explains the run and serves its bundle from the same records.
		r := w.callAPI(t, gatewayEvent(t, "apigw-v2-post-runs-iam.json", request("GET", "/v1/runs/"+fixtureRun+"/explain", "")))
		if r.StatusCode != http.StatusOK || !strings.Contains(r.Body, "States.Timeout") || !strings.Contains(r.Body, "the model asked for publish_report") {
			t.Errorf("explain on %s: %d %.400s", be, r.StatusCode, r.Body)
		}
		r = w.callAPI(t, gatewayEvent(t, "apigw-v2-post-runs-iam.json", request("GET", "/v1/runs/"+fixtureRun+"/bundle", "")))
		served, err := base64.StdEncoding.DecodeString(r.Body)
		if r.StatusCode != http.StatusOK || !r.IsBase64Encoded || err != nil {
			t.Errorf("bundle on %s: %d, base64 %v, %v", be, r.StatusCode, r.IsBase64Encoded, err)
		}
		// Same records, same bytes: the bundle served is the one Finalize wrote.
		if string(served) != string(data) {
			t.Errorf("the api's bundle (%d bytes) differs from Finalize's (%d bytes)", len(served), len(data))
		}
		finalizeTwice(t, w, h, out)
	}
}

func finalizeTwice(t *testing.T, w *world, h lambda.Handler, out []byte) {
	t.Helper()
	r, _ := w.store.GetRun(context.Background(), fixtureRun)
	if r.Status != run.StatusFailed || !strings.Contains(r.Error, "States.Timeout") {
		t.Fatalf("run %s %q", r.Status, r.Error)
	}
	// Step Functions retries Finalize: a second call changes nothing.
	if again, err := h.Invoke(context.Background(), readJSON(t, "sfn-finalize.json")); err != nil || string(again) != string(out) {
		t.Fatalf("%s %v", again, err)
	}
}

func TestScheduleFunction(t *testing.T) {
	w := newWorld(t, onSQLite, worldOptions{})
	h := lambda.NewHandler(w.schedule.Handle)
	ev := readJSON(t, "scheduler-input.json")
	first, err := h.Invoke(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(first, &out); err != nil || out.RunID == "" {
		t.Fatalf("%s %v", first, err)
	}
	// EventBridge Scheduler delivers at least once.
	if again, err := h.Invoke(context.Background(), ev); err != nil || string(again) != string(first) {
		t.Fatalf("redelivery: %s %v, first %s", again, err, first)
	}
	r, err := w.store.GetRun(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Owner != "scheduler" || r.SessionID != "sched-keel-nightly" || r.Agent != "research" {
		t.Fatalf("run %+v", r)
	}
	if st, msg := w.describe(t, out.RunID, machineName); st == "" {
		t.Fatalf("no execution for the scheduled run: %s", msg)
	}
	if _, err := h.Invoke(context.Background(), []byte(`{"agent":"research","input":"x","scheduled_time":"2026-11-30T02:00:00Z"}`)); err == nil {
		t.Fatal("an event naming no schedule was accepted")
	}
}
