package states

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		name    string
		r       Retrier
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{name: "first retry waits IntervalSeconds", r: Retrier{IntervalSeconds: 3, BackoffRate: 2}, attempt: 0, want: 3 * time.Second},
		{name: "second retry is multiplied by BackoffRate", r: Retrier{IntervalSeconds: 3, BackoffRate: 2}, attempt: 1, want: 6 * time.Second},
		{name: "MaxDelaySeconds caps the interval (spec: 4s, not 6s)", r: Retrier{IntervalSeconds: 3, BackoffRate: 2, MaxDelaySeconds: 4}, attempt: 1, want: 4 * time.Second},
		{name: "fractional BackoffRate", r: Retrier{IntervalSeconds: 2, BackoffRate: 1.5}, attempt: 2, want: 4500 * time.Millisecond},
		{name: "BackoffRate 1 keeps the interval", r: Retrier{IntervalSeconds: 5, BackoffRate: 1}, attempt: 7, want: 5 * time.Second},
		{name: "FULL jitter scales by the random draw", r: Retrier{IntervalSeconds: 2, BackoffRate: 2, JitterStrategy: "FULL"}, attempt: 1, rnd: 0.25, want: time.Second},
		{name: "FULL jitter applies after the cap", r: Retrier{IntervalSeconds: 10, BackoffRate: 3, MaxDelaySeconds: 20, JitterStrategy: "FULL"}, attempt: 3, rnd: 0.5, want: 10 * time.Second},
		{name: "NONE ignores the random draw", r: Retrier{IntervalSeconds: 2, BackoffRate: 2, JitterStrategy: "NONE"}, attempt: 1, rnd: 0.25, want: 4 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryDelay(tc.r, tc.attempt, tc.rnd); got != tc.want {
				t.Fatalf("delay = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestErrorMatching(t *testing.T) {
	tests := []struct {
		list []string
		name string
		want bool
	}{
		{[]string{"States.ALL"}, "RetryableError", true},
		{[]string{"States.ALL"}, ErrTimeout, true},
		{[]string{"States.ALL"}, ErrRuntime, false},
		{[]string{"States.ALL"}, ErrDataLimitExceeded, false},
		{[]string{"States.TaskFailed"}, "Lambda.ServiceException", true},
		{[]string{"States.TaskFailed"}, ErrTimeout, false},
		{[]string{"States.TaskFailed"}, ErrHeartbeatTimeout, false},
		{[]string{"States.Timeout"}, ErrHeartbeatTimeout, true},
		{[]string{"States.HeartbeatTimeout"}, ErrTimeout, false},
		{[]string{"FencedError", "RetryableError"}, "RetryableError", true},
		{[]string{"RetryableError"}, "retryableerror", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v matches %s", tc.list, tc.name), func(t *testing.T) {
			if got := errorMatches(tc.list, tc.name); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRetryDecision(t *testing.T) {
	rs := []Retrier{
		{ErrorEquals: []string{"ErrorA", "ErrorB"}, MaxAttempts: 2},
		{ErrorEquals: []string{"ErrorC"}, MaxAttempts: 0},
		{ErrorEquals: []string{"States.ALL"}, MaxAttempts: 1},
	}
	tests := []struct {
		name     string
		attempts []int
		err      string
		wantIdx  int
		want     bool
	}{
		{name: "first match retries", attempts: []int{0, 0, 0}, err: "ErrorB", wantIdx: 0, want: true},
		{name: "spent retrier stops, does not fall through", attempts: []int{2, 0, 0}, err: "ErrorA", wantIdx: 0, want: false},
		{name: "MaxAttempts 0 never retries", attempts: []int{0, 0, 0}, err: "ErrorC", wantIdx: 1, want: false},
		{name: "States.ALL catches the rest", attempts: []int{0, 0, 0}, err: "Other", wantIdx: 2, want: true},
		{name: "States.Runtime is never retried", attempts: []int{0, 0, 0}, err: ErrRuntime, wantIdx: -1, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx, ok := retryDecision(rs, tc.attempts, tc.err)
			if idx != tc.wantIdx || ok != tc.want {
				t.Fatalf("got (%d, %v), want (%d, %v)", idx, ok, tc.wantIdx, tc.want)
			}
		})
	}
}

// namedErr is an error with the name name, the way an aws-lambda-go
// handler names one: a messages.InvokeResponse_Error.
func namedErr(name string) error {
	return messages.InvokeResponse_Error{Type: name, Message: name + " happened"}
}

// TestRetryCatchExecution runs the specification's "complex retry
// scenario" through the executor: a task fails with ErrorA, ErrorB, ErrorC,
// ErrorB; the first two are retried after 1 s and 2 s, the third after 5 s,
// and the fourth goes to the catcher because the first retrier is spent.
// An auto-advancing clock makes the waits free and the history timestamps
// exact.
func TestRetryCatchExecution(t *testing.T) {
	def := `{
	  "StartAt": "X",
	  "States": {
	    "X": {
	      "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
	      "Parameters": {"FunctionName": "flaky", "Payload": {}},
	      "Retry": [
	        {"ErrorEquals": ["ErrorA", "ErrorB"], "IntervalSeconds": 1, "BackoffRate": 2, "MaxAttempts": 2},
	        {"ErrorEquals": ["ErrorC"], "IntervalSeconds": 5}
	      ],
	      "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.caught", "Next": "Z"}],
	      "Next": "Y"
	    },
	    "Y": {"Type": "Succeed"},
	    "Z": {"Type": "Pass", "End": true}
	  }
	}`
	tests := []struct {
		name       string
		errs       []string
		jitter     string
		rnd        float64
		wantGaps   []time.Duration
		wantStatus string
		wantLast   string
	}{
		{name: "spec example", errs: []string{"ErrorA", "ErrorB", "ErrorC", "ErrorB"},
			wantGaps: []time.Duration{time.Second, 2 * time.Second, 5 * time.Second}, wantStatus: StatusSucceeded, wantLast: "Z"},
		{name: "retry then succeed", errs: []string{"ErrorC"}, wantGaps: []time.Duration{5 * time.Second}, wantStatus: StatusSucceeded, wantLast: "Y"},
		{name: "uncaught by retriers goes to catcher at once", errs: []string{"Boom"}, wantStatus: StatusSucceeded, wantLast: "Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			flaky := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls <= len(tc.errs) {
					return nil, namedErr(tc.errs[calls-1])
				}
				return json.RawMessage(`"ok"`), nil
			}
			env := newEnv(t, envOpts{clock: newFakeClock(true), lambdas: map[string]LambdaFunc{"flaky": flaky}})
			arn := env.register("retry", def, nil)
			ex := env.start(arn, "e1", `{}`)
			d := env.waitDone(ex)
			if d.Status != tc.wantStatus {
				t.Fatalf("status %s", d.Status)
			}
			evs := env.history(ex)
			path := statePath(evs)
			if path[len(path)-1] != tc.wantLast {
				t.Fatalf("last state %v, want %s", path, tc.wantLast)
			}
			var gaps []time.Duration
			var failedAt time.Time
			for _, e := range evs {
				switch e.Type {
				case "TaskFailed":
					failedAt = e.Timestamp
				case "TaskScheduled":
					if !failedAt.IsZero() {
						gaps = append(gaps, e.Timestamp.Sub(failedAt))
					}
				}
			}
			if fmt.Sprint(gaps) != fmt.Sprint(tc.wantGaps) && !(len(gaps) == 0 && len(tc.wantGaps) == 0) {
				t.Fatalf("retry gaps %v, want %v\n%s", gaps, tc.wantGaps, dumpHistory(evs))
			}
			if tc.wantLast == "Z" {
				var out map[string]any
				if err := json.Unmarshal([]byte(*d.Output), &out); err != nil {
					t.Fatal(err)
				}
				caught, _ := out["caught"].(map[string]any)
				if caught["Error"] != tc.errs[len(tc.errs)-1] {
					t.Fatalf("caught %v", out)
				}
			}
		})
	}
}

// TestJitterUsesInjectedRand checks FULL jitter end to end with an injected
// random source.
func TestJitterUsesInjectedRand(t *testing.T) {
	def := `{"StartAt": "X", "States": {"X": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
	  "Parameters": {"FunctionName": "f", "Payload": {}},
	  "Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 8, "BackoffRate": 2, "MaxAttempts": 2, "MaxDelaySeconds": 10, "JitterStrategy": "FULL"}],
	  "End": true}}}`
	n := 0
	f := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		n++
		if n <= 2 {
			return nil, namedErr("E")
		}
		return json.RawMessage(`1`), nil
	}
	env := newEnv(t, envOpts{clock: newFakeClock(true), rand: func() float64 { return 0.5 }, lambdas: map[string]LambdaFunc{"f": f}})
	ex := env.start(env.register("j", def, nil), "e", `{}`)
	if d := env.waitDone(ex); d.Status != StatusSucceeded {
		t.Fatalf("status %s", d.Status)
	}
	var gaps []time.Duration
	var last time.Time
	for _, e := range env.history(ex) {
		if e.Type == "TaskFailed" {
			last = e.Timestamp
		}
		if e.Type == "TaskScheduled" && !last.IsZero() {
			gaps = append(gaps, e.Timestamp.Sub(last))
		}
	}
	// 8 s × 0.5, then min(16 s, 10 s) × 0.5.
	if fmt.Sprint(gaps) != fmt.Sprint([]time.Duration{4 * time.Second, 5 * time.Second}) {
		t.Fatalf("gaps %v", gaps)
	}
}
