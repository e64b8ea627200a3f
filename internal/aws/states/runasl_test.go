package states

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/keelrun/keel/internal/testbin"
)

// decision is what the Step function (and the Fargate task) returns.
type decision struct {
	Next                   string `json:"next"`
	ApprovalID             string `json:"approval_id"`
	WaitSeconds            int    `json:"wait_seconds"`
	ApprovalTimeoutSeconds int    `json:"approval_timeout_seconds"`
	Error                  string `json:"error"`
	// Code is the function the next Step invokes: the Step echoes the
	// code it was invoked as.
	Code string `json:"code,omitempty"`
	// Children are child runs for the state machine to start.
	Children []string `json:"children"`
}

// MarshalJSON writes Children as [] when there are none, as the step
// role does.
func (d decision) MarshalJSON() ([]byte, error) {
	type plain decision
	if d.Children == nil {
		d.Children = []string{}
	}
	return json.Marshal(plain(d))
}

// The harness's named errors, as Step Functions sees them by type name.
type RetryableError struct{ msg string }

func (e *RetryableError) Error() string { return e.msg }

type FencedError struct{}

func (e *FencedError) Error() string { return "lease lost" }

type stepReply struct {
	d   decision
	err error
}

// fakeKeel stands in for the Step, Approval and Finalize functions and the
// Fargate task runner.
type fakeKeel struct {
	t         testing.TB
	mu        sync.Mutex
	script    []stepReply
	stepCalls []map[string]any
	finals    []map[string]any
	approvals chan map[string]any
	spills    chan json.RawMessage
}

func newFakeKeel(t testing.TB, script ...stepReply) *fakeKeel {
	return &fakeKeel{t: t, script: script, approvals: make(chan map[string]any, 16), spills: make(chan json.RawMessage, 16)}
}

func reply(next string) stepReply { return stepReply{d: decision{Next: next}} }

func (f *fakeKeel) lambdas() map[string]LambdaFunc {
	return map[string]LambdaFunc{
		"keel-step": func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			var p map[string]any
			if err := json.Unmarshal(payload, &p); err != nil {
				return nil, err
			}
			f.mu.Lock()
			f.stepCalls = append(f.stepCalls, p)
			r := reply("done")
			if len(f.script) > 0 {
				r, f.script = f.script[0], f.script[1:]
			}
			f.mu.Unlock()
			if r.err != nil {
				return nil, r.err
			}
			if r.d.Code == "" {
				r.d.Code, _ = p["code"].(string)
			}
			return json.Marshal(r.d)
		},
		"keel-approval": func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			var p map[string]any
			if err := json.Unmarshal(payload, &p); err != nil {
				return nil, err
			}
			f.approvals <- p
			return json.RawMessage(`{}`), nil
		},
		"keel-finalize": func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			var p map[string]any
			if err := json.Unmarshal(payload, &p); err != nil {
				return nil, err
			}
			f.mu.Lock()
			f.finals = append(f.finals, p)
			f.mu.Unlock()
			return json.RawMessage(`{"ok": true}`), nil
		},
	}
}

func (f *fakeKeel) RunTask(ctx context.Context, params json.RawMessage) error {
	f.spills <- params
	return nil
}

func (f *fakeKeel) steps() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.stepCalls)
}

func (f *fakeKeel) finalCalls() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.finals...)
}

func recv[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
		panic("unreachable")
	}
}

type runEnv struct {
	*testEnv
	keel  *fakeKeel
	clock *fakeClock
	arn   string
}

func newRunEnv(t *testing.T, script ...stepReply) *runEnv {
	keel := newFakeKeel(t, script...)
	clock := newFakeClock(false)
	env := newEnv(t, envOpts{clock: clock, lambdas: keel.lambdas(), tasks: keel})
	arn := env.register("keel-run", string(runASL(t)), runSubs)
	return &runEnv{testEnv: env, keel: keel, clock: clock, arn: arn}
}

func (r *runEnv) startRun(runID string) string {
	return r.start(r.arn, runID, fmt.Sprintf(`{"run_id": %q, "generation": 0}`, runID))
}

func wantPath(t *testing.T, evs []HistoryEvent, want ...string) {
	t.Helper()
	if got := statePath(evs); !slices.Equal(got, want) {
		t.Fatalf("state path\n got %v\nwant %v", got, want)
	}
}

func TestRunContinueLoop(t *testing.T) {
	r := newRunEnv(t, reply("continue"), reply("continue"), reply("done"))
	ex := r.startRun("run-1")
	d := r.waitDone(ex)
	if d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	wantPath(t, r.history(ex), "Init", "Step", "Count", "Route", "Step", "Count", "Route", "Step", "Count", "Route", "Finalize", "Outcome", "Done")
	for _, c := range r.keel.stepCalls {
		// The payload is ids only, and the function invoked.
		if len(c) != 3 || c["run_id"] != "run-1" || c["execution_id"] != ex || c["code"] != "keel-step" {
			t.Fatalf("step payload %v", c)
		}
	}
	fin := r.keel.finalCalls()
	if len(fin) != 1 || fin[0]["run_id"] != "run-1" || fin[0]["error"] != nil || fin[0]["decision"].(map[string]any)["next"] != "done" {
		t.Fatalf("finalize payloads %v", fin)
	}
	if !strings.Contains(*d.Output, `"loop":3`) {
		t.Fatalf("output %s", *d.Output)
	}
}

func TestRunApproval(t *testing.T) {
	ctx := context.Background()
	r := newRunEnv(t, stepReply{d: decision{Next: "approval", ApprovalID: "ap-1", ApprovalTimeoutSeconds: 3600}}, reply("done"))
	ex := r.startRun("run-ap")
	call := recv(t, r.keel.approvals, "the approval function")
	token, _ := call["task_token"].(string)
	if call["run_id"] != "run-ap" || call["approval_id"] != "ap-1" || token == "" {
		t.Fatalf("approval payload %v", call)
	}
	r.waitEvent(ex, "TaskSubmitted", 1)
	if n := r.keel.steps(); n != 1 {
		t.Fatalf("step ran %d times while awaiting approval", n)
	}
	// The person decides: the approval API sends the token with the SDK.
	if _, err := r.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{"approved": true, "by": "ana"}`)}); err != nil {
		t.Fatal(err)
	}
	d := r.waitDone(ex)
	if d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	evs := r.history(ex)
	wantPath(t, evs, "Init", "Step", "Count", "Route", "AwaitApproval", "Step", "Count", "Route", "Finalize", "Outcome", "Done")
	// The approval output is ignored by the machine.
	if strings.Contains(*d.Output, "approved") {
		t.Fatalf("approval output leaked into state: %s", *d.Output)
	}
	// The token is spent.
	_, err := r.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{}`)})
	var tto *types.TaskTimedOut
	if !errors.As(err, &tto) {
		t.Fatalf("second SendTaskSuccess: %v, want TaskTimedOut", err)
	}
}

func TestRunApprovalTimeout(t *testing.T) {
	r := newRunEnv(t, stepReply{d: decision{Next: "approval", ApprovalID: "ap-2", ApprovalTimeoutSeconds: 2592000}})
	ex := r.startRun("run-apt")
	recv(t, r.keel.approvals, "the approval function")
	evs := r.waitEvent(ex, "TaskSubmitted", 1)
	// The harness always sets the approval's timeout; the task waits that long.
	var sched struct {
		D struct {
			Timeout int `json:"timeoutInSeconds"`
		} `json:"taskScheduledEventDetails"`
	}
	for _, e := range evs {
		if e.Type == "TaskScheduled" {
			_ = json.Unmarshal(e.Details, &sched)
		}
	}
	if sched.D.Timeout != 2592000 {
		t.Fatalf("approval timeout %d, want 2592000", sched.D.Timeout)
	}
	r.clock.Advance(29 * 24 * time.Hour)
	r.clock.Advance(24*time.Hour + time.Second)
	d := r.waitDone(ex)
	if d.Status != StatusFailed || aws.ToString(d.Error) != ErrTimeout {
		t.Fatalf("status %s error %v", d.Status, aws.ToString(d.Error))
	}
	wantPath(t, r.history(ex), "Init", "Step", "Count", "Route", "AwaitApproval", "Finalize", "Outcome", "RunErrored")
	fin := r.keel.finalCalls()
	if len(fin) != 1 || fin[0]["error"].(map[string]any)["Error"] != ErrTimeout {
		t.Fatalf("finalize %v", fin)
	}
}

func TestRunWait(t *testing.T) {
	r := newRunEnv(t, stepReply{d: decision{Next: "wait", WaitSeconds: 3600}}, reply("done"))
	ex := r.startRun("run-w")
	r.waitEntered(ex, "Wait", 1)
	r.clock.waitTimer(t, time.Hour)
	r.clock.Advance(3599 * time.Second)
	if n := r.keel.steps(); n != 1 {
		t.Fatalf("step ran %d times before the wait ended", n)
	}
	r.clock.Advance(time.Second)
	d := r.waitDone(ex)
	if d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	evs := r.history(ex)
	wantPath(t, evs, "Init", "Step", "Count", "Route", "Wait", "Step", "Count", "Route", "Finalize", "Outcome", "Done")
	var entered, exited time.Time
	for _, e := range evs {
		switch e.Type {
		case "WaitStateEntered":
			entered = e.Timestamp
		case "WaitStateExited":
			exited = e.Timestamp
		}
	}
	if got := exited.Sub(entered); got != time.Hour {
		t.Fatalf("waited %v on the executor clock, want 1h", got)
	}
}

func spillEnv(t *testing.T, params json.RawMessage) map[string]string {
	t.Helper()
	var p runTaskParams
	if err := json.Unmarshal(params, &p); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, c := range p.Overrides.ContainerOverrides {
		if c.Name != "keel" {
			t.Fatalf("container override %q", c.Name)
		}
		for _, kv := range c.Environment {
			env[kv.Name] = kv.Value
		}
	}
	return env
}

func TestRunSpillWithHeartbeats(t *testing.T) {
	ctx := context.Background()
	r := newRunEnv(t, reply("spill"), reply("done"))
	ex := r.startRun("run-sp")
	params := recv(t, r.keel.spills, "the Fargate task")
	var full struct {
		Cluster, TaskDefinition, LaunchType string
		NetworkConfiguration                struct {
			AwsvpcConfiguration struct {
				Subnets, SecurityGroups []string
				AssignPublicIp          string
			}
		}
	}
	if err := json.Unmarshal(params, &full); err != nil {
		t.Fatal(err)
	}
	if full.Cluster != "local" || full.TaskDefinition != "keel-fargate" || full.LaunchType != "FARGATE" ||
		!slices.Equal(full.NetworkConfiguration.AwsvpcConfiguration.Subnets, []string{"subnet-a", "subnet-b"}) ||
		full.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp != runSubs["AssignPublicIp"] {
		t.Fatalf("runTask parameters %s", params)
	}
	env := spillEnv(t, params)
	token := env["KEEL_TASK_TOKEN"]
	if env["KEEL_RUN_ID"] != "run-sp" || token == "" {
		t.Fatalf("task env %v", env)
	}
	r.waitEvent(ex, "TaskSubmitted", 1)
	// 200 s of work with a heartbeat every 100 s: never 120 s of silence.
	for range 2 {
		if _, err := r.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)}); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(100 * time.Second)
	}
	if _, err := r.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)}); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(decision{Next: "done"})
	if _, err := r.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(out))}); err != nil {
		t.Fatal(err)
	}
	d := r.waitDone(ex)
	if d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	evs := r.history(ex)
	wantPath(t, evs, "Init", "Step", "Count", "Route", "RunOnFargate", "Count", "Route", "Finalize", "Outcome", "Done")
	if countType(evs, "TaskTimedOut") != 0 || r.keel.steps() != 1 {
		t.Fatalf("unexpected timeout or extra step\n%s", dumpHistory(evs))
	}
}

func TestRunSpillHeartbeatTimeout(t *testing.T) {
	ctx := context.Background()
	r := newRunEnv(t, reply("spill"), reply("done"))
	ex := r.startRun("run-hb")
	token := spillEnv(t, recv(t, r.keel.spills, "the Fargate task"))["KEEL_TASK_TOKEN"]
	r.waitEvent(ex, "TaskSubmitted", 1)
	r.clock.Advance(119 * time.Second)
	if _, err := r.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)}); err != nil {
		t.Fatal(err)
	}
	// The task dies: 120 s pass with no heartbeat.
	r.clock.Advance(121 * time.Second)
	d := r.waitDone(ex)
	if d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	evs := r.history(ex)
	wantPath(t, evs, "Init", "Step", "Count", "Route", "RunOnFargate", "Step", "Count", "Route", "Finalize", "Outcome", "Done")
	var to struct {
		D struct{ Error string } `json:"taskTimedOutEventDetails"`
	}
	for _, e := range evs {
		if e.Type == "TaskTimedOut" {
			_ = json.Unmarshal(e.Details, &to)
		}
	}
	if to.D.Error != ErrHeartbeatTimeout {
		t.Fatalf("timeout error %q\n%s", to.D.Error, dumpHistory(evs))
	}
	// The recovered run finalizes without the stale error (Count cleared it).
	if fin := r.keel.finalCalls(); len(fin) != 1 || fin[0]["error"] != nil {
		t.Fatalf("finalize %v", fin)
	}
	// A late result from the lost task is refused.
	_, err := r.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{}`)})
	var tto *types.TaskTimedOut
	if !errors.As(err, &tto) {
		t.Fatalf("late SendTaskSuccess: %v, want TaskTimedOut", err)
	}
}

// TestRunRolloverAtLoopBound runs 500 continue decisions: the machine
// rolls over on its own, and each generation's history stays far below
// the 25,000-event limit.
func TestRunRolloverAtLoopBound(t *testing.T) {
	testbin.SkipShort(t, "runs 500 loop iterations")
	script := make([]stepReply, 0, 501)
	for range 500 {
		script = append(script, reply("continue"))
	}
	script = append(script, reply("done"))
	r := newRunEnv(t, script...)
	ex := r.startRun("run-b")
	if d := r.waitDone(ex); d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	evs := r.history(ex)
	if got := statePath(evs); got[len(got)-1] != "RolledOver" || len(enteredStates(evs, "Step")) != 500 {
		t.Fatalf("generation 0 ended in %s after %d steps", got[len(got)-1], len(enteredStates(evs, "Step")))
	}
	next := strings.TrimSuffix(ex, "run-b") + "run-b-g1"
	if d := r.waitDone(next); d.Status != StatusSucceeded {
		t.Fatalf("generation 1 status %s", d.Status)
	}
	fmt.Printf("history events in a 500-step generation: %d of %d\n", len(evs), HistoryLimit)
	if len(evs) > HistoryLimit/2 {
		t.Fatalf("generation 0 used %d events", len(evs))
	}
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		name       string
		script     []stepReply
		advance    time.Duration // after the first TaskFailed, for retry backoff
		wantStatus string
		wantError  string
		wantLast   string
		wantSteps  int
		wantFinal  int
	}{
		{name: "a failing step is caught into Finalize", script: []stepReply{{err: errors.New("model exploded")}},
			wantStatus: StatusFailed, wantError: "errorString", wantLast: "RunErrored", wantSteps: 1, wantFinal: 1},
		{name: "RetryableError is retried", script: []stepReply{{err: &RetryableError{"throttled"}}, reply("done")}, advance: 10 * time.Minute,
			wantStatus: StatusSucceeded, wantLast: "Done", wantSteps: 2, wantFinal: 1},
		{name: "Lambda transient errors are retried", script: []stepReply{{err: namedErr("Lambda.TooManyRequestsException")}, reply("done")}, advance: time.Minute,
			wantStatus: StatusSucceeded, wantLast: "Done", wantSteps: 2, wantFinal: 1},
		{name: "FencedError stops quietly without Finalize", script: []stepReply{{err: &FencedError{}}},
			wantStatus: StatusFailed, wantError: "FencedError", wantLast: "Superseded", wantSteps: 1, wantFinal: 0},
		{name: "a failed decision finalizes then fails", script: []stepReply{{d: decision{Next: "failed", Error: "budget exceeded"}}},
			wantStatus: StatusFailed, wantError: "Keel.RunFailed", wantLast: "RunFailed", wantSteps: 1, wantFinal: 1},
		{name: "cancelled and needs_human succeed after Finalize", script: []stepReply{reply("needs_human")},
			wantStatus: StatusSucceeded, wantLast: "Done", wantSteps: 1, wantFinal: 1},
		{name: "an unknown decision is finalized as a failure", script: []stepReply{reply("dance")},
			wantStatus: StatusFailed, wantError: "Keel.BadDecision", wantLast: "RunErrored", wantSteps: 1, wantFinal: 1},
		{name: "rollover is not a decision (the loop bound rolls over)", script: []stepReply{reply("rollover")},
			wantStatus: StatusFailed, wantError: "Keel.BadDecision", wantLast: "RunErrored", wantSteps: 1, wantFinal: 1},
		{name: "an approval without a timeout is a bad decision", script: []stepReply{{d: decision{Next: "approval", ApprovalID: "ap"}}},
			wantStatus: StatusFailed, wantError: "Keel.BadDecision", wantLast: "RunErrored", wantSteps: 1, wantFinal: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunEnv(t, tc.script...)
			ex := r.startRun("run-f")
			if tc.advance > 0 {
				r.waitEvent(ex, "TaskFailed", 1)
				r.clock.Advance(tc.advance)
			}
			d := r.waitDone(ex)
			if d.Status != tc.wantStatus || aws.ToString(d.Error) != tc.wantError {
				t.Fatalf("status %s error %q, want %s %q", d.Status, aws.ToString(d.Error), tc.wantStatus, tc.wantError)
			}
			path := statePath(r.history(ex))
			if path[len(path)-1] != tc.wantLast {
				t.Fatalf("path %v", path)
			}
			if r.keel.steps() != tc.wantSteps || len(r.keel.finalCalls()) != tc.wantFinal {
				t.Fatalf("steps %d finalize %d", r.keel.steps(), len(r.keel.finalCalls()))
			}
		})
	}
}

func TestRunStop(t *testing.T) {
	ctx := context.Background()
	r := newRunEnv(t, stepReply{d: decision{Next: "approval", ApprovalID: "ap", ApprovalTimeoutSeconds: 60}})
	ex := r.startRun("run-stop")
	token := recv(t, r.keel.approvals, "the approval function")["task_token"].(string)
	r.waitEvent(ex, "TaskSubmitted", 1)
	if _, err := r.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(ex), Error: aws.String("Keel.Cancelled"), Cause: aws.String("operator")}); err != nil {
		t.Fatal(err)
	}
	out, err := r.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(ex)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != types.ExecutionStatusAborted || aws.ToString(out.Error) != "Keel.Cancelled" || out.StopDate == nil {
		t.Fatalf("described %s %v", out.Status, aws.ToString(out.Error))
	}
	_, err = r.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{}`)})
	var tto *types.TaskTimedOut
	if !errors.As(err, &tto) {
		t.Fatalf("SendTaskSuccess after stop: %v", err)
	}
	// Time passing does not revive it.
	r.clock.Advance(time.Hour)
	evs := r.history(ex)
	if evs[len(evs)-1].Type != "ExecutionAborted" || len(r.keel.finalCalls()) != 0 {
		t.Fatalf("after stop:\n%s", dumpHistory(evs))
	}
}

// TestRunSpillChildProcess runs RunOnFargate through ExecTaskRunner: a real
// child process (this test binary) reads KEEL_TASK_TOKEN, heartbeats and
// reports its decision through the local API with the SDK.
func TestRunSpillChildProcess(t *testing.T) {
	keel := newFakeKeel(t, reply("spill"))
	env := newEnv(t, envOpts{lambdas: keel.lambdas()})
	runner := &ExecTaskRunner{Command: os.Args[0], Args: []string{"-test.run=^TestHelperFargateTask$"},
		Env: append(os.Environ(), "KEEL_HELPER=fargate", "KEEL_SFN_ENDPOINT="+env.url)}
	env.exec.tasks = runner
	arn := env.register("keel-run", string(runASL(t)), runSubs)
	ex := env.start(arn, "run-child", `{"run_id": "run-child", "generation": 0}`)
	d := env.waitDone(ex)
	runner.Wait()
	if d.Status != StatusSucceeded {
		t.Fatalf("status %s\n%s", d.Status, dumpHistory(env.history(ex)))
	}
	wantPath(t, env.history(ex), "Init", "Step", "Count", "Route", "RunOnFargate", "Count", "Route", "Finalize", "Outcome", "Done")
	if keel.steps() != 1 {
		t.Fatalf("steps %d", keel.steps())
	}
}

// TestHelperFargateTask is the child process of TestRunSpillChildProcess.
func TestHelperFargateTask(t *testing.T) {
	if os.Getenv("KEEL_HELPER") != "fargate" {
		t.Skip("helper process")
	}
	ctx := context.Background()
	c := newClient(os.Getenv("KEEL_SFN_ENDPOINT"))
	token := os.Getenv("KEEL_TASK_TOKEN")
	if os.Getenv("KEEL_RUN_ID") != "run-child" || token == "" {
		t.Fatal("missing task environment")
	}
	if _, err := c.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)}); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(decision{Next: "done"})
	if _, err := c.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(out))}); err != nil {
		t.Fatal(err)
	}
}
