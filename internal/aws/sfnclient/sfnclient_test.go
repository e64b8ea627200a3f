package sfnclient_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/keelrun/keel/internal/aws/sfnclient"
	"github.com/keelrun/keel/internal/aws/states"
)

// The tests run the real SDK client against Keel's local Step Functions
// endpoint (internal/aws/states) served over HTTP, the same endpoint `keel
// dev` exposes. It answers like AWS for these four operations, including
// TaskTimedOut for a token whose task no longer waits.

// manualClock is a states.Clock that moves only when told to.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []manualTimer
}

type manualTimer struct {
	at time.Time
	ch chan time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch, func() bool { return false }
	}
	c.timers = append(c.timers, manualTimer{at: c.now.Add(d), ch: ch})
	return ch, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, t := range c.timers {
			if t.ch == ch {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
		} else {
			t.ch <- c.now
		}
	}
	c.timers = kept
}

type env struct {
	raw     *sfn.Client
	client  *sfnclient.Client
	machine string
	tokens  chan string
	clock   *manualClock
}

// askDef waits for a task token handed to the "ask" function, with a
// 60-second task timeout.
const askDef = `{"StartAt": "Ask", "States": {
  "Ask": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
          "Parameters": {"FunctionName": "ask", "Payload": {"Token.$": "$$.Task.Token"}},
          "TimeoutSeconds": 60, "Next": "Done"},
  "Done": {"Type": "Succeed"}}}`

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, err := states.OpenStore(ctx, filepath.Join(t.TempDir(), "states.db"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{tokens: make(chan string, 4), clock: &manualClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}}
	ask := func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
		var in struct{ Token string }
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		e.tokens <- in.Token
		return json.RawMessage(`null`), nil
	}
	ex, err := states.New(states.Config{Store: st, Clock: e.clock, Lambdas: map[string]states.LambdaFunc{"ask": ask}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(states.NewHandler(ex, nil))
	t.Cleanup(func() {
		srv.Close()
		ex.Close()
		_ = st.Close()
	})
	m, err := states.Load([]byte(askDef), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.machine, err = ex.Register(ctx, "ask", m); err != nil {
		t.Fatal(err)
	}
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.raw = sfn.New(sfn.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	if e.client, err = sfnclient.New(e.raw); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) token(t *testing.T) string {
	t.Helper()
	select {
	case tok := <-e.tokens:
		return tok
	case <-time.After(30 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("no task token arrived")
		return ""
	}
}

// status polls until the execution leaves RUNNING (the executor works in
// its own goroutine) and returns its final status.
func (e *env) status(t *testing.T, arn string) types.ExecutionStatus {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		out, err := e.raw.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != types.ExecutionStatusRunning {
			return out.Status
		}
	}
	t.Fatalf("execution %s still running", arn)
	return ""
}

func TestStartExecution(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arn, err := e.client.StartExecution(ctx, e.machine, "run_1", `{"run_id":"run_1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(arn, ":execution:ask:run_1") {
		t.Fatalf("execution ARN %q", arn)
	}
	cases := []struct {
		name, machine, exec, input string
		want                       error
	}{
		{"SameNameSameInput", e.machine, "run_1", `{"run_id":"run_1"}`, nil},
		{"SameNameOtherInput", e.machine, "run_1", `{"run_id":"other"}`, sfnclient.ErrExecutionAlreadyExists},
		{"UnknownMachine", e.machine + "x", "run_2", `{}`, sfnclient.ErrStateMachineDoesNotExist},
		{"BadName", e.machine, "a b", `{}`, sfnclient.ErrInvalid},
		{"BadInput", e.machine, "run_3", `{`, sfnclient.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.client.StartExecution(ctx, tc.machine, tc.exec, tc.input)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == nil && got != arn {
				t.Fatalf("idempotent start returned %q, want %q", got, arn)
			}
			if tc.want != nil && !strings.Contains(err.Error(), "StartExecution") {
				t.Fatalf("error does not name the operation: %v", err)
			}
		})
	}
}

func TestTaskTokens(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arn, err := e.client.StartExecution(ctx, e.machine, "approve", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	tok := e.token(t)
	if err := e.client.SendTaskHeartbeat(ctx, tok); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	if err := e.client.SendTaskSuccess(ctx, tok, `{"approved":true}`); err != nil {
		t.Fatalf("success: %v", err)
	}
	if st := e.status(t, arn); st != types.ExecutionStatusSucceeded {
		t.Fatalf("execution %s after SendTaskSuccess", st)
	}
	unknown := make([]byte, 48)
	_, _ = rand.Read(unknown)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"SuccessTwice", func() error { return e.client.SendTaskSuccess(ctx, tok, `{}`) }, sfnclient.ErrTaskTimedOut},
		{"FailureAfterSuccess", func() error { return e.client.SendTaskFailure(ctx, tok, "Denied", "late") }, sfnclient.ErrTaskTimedOut},
		{"HeartbeatAfterSuccess", func() error { return e.client.SendTaskHeartbeat(ctx, tok) }, sfnclient.ErrTaskTimedOut},
		{"MalformedToken", func() error { return e.client.SendTaskSuccess(ctx, "garbage", `{}`) }, sfnclient.ErrInvalidToken},
		{"UnknownToken", func() error {
			return e.client.SendTaskHeartbeat(ctx, base64.RawURLEncoding.EncodeToString(unknown))
		}, sfnclient.ErrTaskDoesNotExist},
		{"OutputNotJSON", func() error { return e.client.SendTaskSuccess(ctx, tok, `{`) }, sfnclient.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// A failure reaches the state machine with its error name, and an
// over-long cause is truncated to Step Functions' limit rather than
// refused.
func TestSendTaskFailure(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arn, err := e.client.StartExecution(ctx, e.machine, "deny", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	tok := e.token(t)
	if err := e.client.SendTaskFailure(ctx, tok, "Denied", strings.Repeat("é", 40000)); err != nil {
		t.Fatal(err)
	}
	if st := e.status(t, arn); st != types.ExecutionStatusFailed {
		t.Fatalf("execution %s after SendTaskFailure", st)
	}
	out, err := e.raw.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Error) != "Denied" || len(aws.ToString(out.Cause)) > 32768 || !strings.HasPrefix(aws.ToString(out.Cause), "éé") {
		t.Fatalf("error %q, cause of %d bytes", aws.ToString(out.Error), len(aws.ToString(out.Cause)))
	}
}

// A token whose task timed out is ErrTaskTimedOut.
func TestTaskTimedOut(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arn, err := e.client.StartExecution(ctx, e.machine, "slow", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	tok := e.token(t)
	e.clock.Advance(61 * time.Second)
	if st := e.status(t, arn); st != types.ExecutionStatusFailed {
		t.Fatalf("execution %s after the task timeout", st)
	}
	if err := e.client.SendTaskSuccess(ctx, tok, `{}`); !errors.Is(err, sfnclient.ErrTaskTimedOut) {
		t.Fatalf("err = %v, want ErrTaskTimedOut", err)
	}
}

// DescribeExecution and StopExecution against the local executor: a
// running execution, one stopped (ABORTED with the given error), and one
// that never existed (ErrExecutionDoesNotExist), as the sweeper sees them.
func TestDescribeAndStopExecution(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arn, err := e.client.StartExecution(ctx, e.machine, "run_9", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := sfnclient.ExecutionARN(e.machine, "run_9"); got != arn {
		t.Fatalf("ExecutionARN = %q, want %q", got, arn)
	}
	e.token(t)
	d, err := e.client.DescribeExecution(ctx, arn)
	if err != nil || d.Status != "RUNNING" || d.Name != "run_9" || d.ARN != arn {
		t.Fatalf("describe running: %+v %v", d, err)
	}
	if err := e.client.StopExecution(ctx, arn, "Keel.Test", "stopped by the test"); err != nil {
		t.Fatal(err)
	}
	d, err = e.client.DescribeExecution(ctx, arn)
	if err != nil || d.Status != "ABORTED" || d.Error != "Keel.Test" {
		t.Fatalf("describe stopped: %+v %v", d, err)
	}
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"DescribeUnknown", func() error {
			_, err := e.client.DescribeExecution(ctx, sfnclient.ExecutionARN(e.machine, "nope"))
			return err
		}, sfnclient.ErrExecutionDoesNotExist},
		{"StopUnknown", func() error {
			return e.client.StopExecution(ctx, sfnclient.ExecutionARN(e.machine, "nope"), "", "")
		}, sfnclient.ErrExecutionDoesNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if sfnclient.ExecutionARN("not-an-arn", "x") != "" {
		t.Fatal("ExecutionARN of a non-ARN")
	}
}
