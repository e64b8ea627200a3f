package states

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
)

const waitForever = `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 86400, "Next": "P"}, "P": {"Type": "Pass", "End": true}}}`

func TestStartExecutionIdempotency(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock(false)
	env := newEnv(t, envOpts{clock: clock})
	arn := env.register("m", waitForever, nil)
	start := func(name, input string) (string, error) {
		out, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String(name), Input: aws.String(input)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ExecutionArn), nil
	}
	first, err := start("run-1", `{"a": 1}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "arn:aws:states:us-east-1:000000000000:execution:m:run-1"; first != want {
		t.Fatalf("arn %s, want %s", first, want)
	}
	again, err := start("run-1", `{"a":1}`)
	if err != nil || again != first {
		t.Fatalf("same name and input: %v %s", err, again)
	}
	var exists *types.ExecutionAlreadyExists
	if _, err := start("run-1", `{"a": 2}`); !errors.As(err, &exists) {
		t.Fatalf("other input: %v, want ExecutionAlreadyExists", err)
	}
	if n := countType(env.history(first), "ExecutionStarted"); n != 1 {
		t.Fatalf("%d ExecutionStarted events", n)
	}
	// Once closed, the name is taken even with the same input (as on AWS).
	env.waitEntered(first, "W", 1)
	clock.waitTimer(t, 86400e9) // the state's timer comes after its entry
	clock.Advance(86400e9)
	env.waitDone(first)
	if _, err := start("run-1", `{"a": 1}`); !errors.As(err, &exists) {
		t.Fatalf("closed execution: %v, want ExecutionAlreadyExists", err)
	}
}

func TestAPIErrors(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t, envOpts{})
	arn := env.register("m", waitForever, nil)
	good := newToken()
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"unknown state machine", func() error {
			_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn + "x")})
			return err
		}, "StateMachineDoesNotExist"},
		{"malformed state machine ARN", func() error {
			_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("nope")})
			return err
		}, "InvalidArn"},
		{"invalid name", func() error {
			_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("a b")})
			return err
		}, "InvalidName"},
		{"invalid input", func() error {
			_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String("{")})
			return err
		}, "InvalidExecutionInput"},
		{"describe unknown execution", func() error {
			_, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String("arn:aws:states:us-east-1:000000000000:execution:m:none")})
			return err
		}, "ExecutionDoesNotExist"},
		{"stop unknown execution", func() error {
			_, err := env.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String("arn:aws:states:us-east-1:000000000000:execution:m:none")})
			return err
		}, "ExecutionDoesNotExist"},
		{"malformed token", func() error {
			_, err := env.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String("garbage"), Output: aws.String("{}")})
			return err
		}, "InvalidToken"},
		{"unknown token", func() error {
			_, err := env.client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(good), Error: aws.String("E")})
			return err
		}, "TaskDoesNotExist"},
		{"heartbeat unknown token", func() error {
			_, err := env.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(good)})
			return err
		}, "TaskDoesNotExist"},
		{"invalid output", func() error {
			_, err := env.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(good), Output: aws.String("{")})
			return err
		}, "InvalidOutput"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
		})
	}
	// The error body is AWS-shaped.
	req, _ := http.NewRequest(http.MethodPost, env.url, strings.NewReader(`{"executionArn": "x"}`))
	req.Header.Set("X-Amz-Target", "AWSStepFunctions.DescribeExecution")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := jsonDecode(resp, &body); err != nil || resp.StatusCode != 400 || !strings.HasSuffix(body.Type, "#ExecutionDoesNotExist") {
		t.Fatalf("status %d body %+v err %v", resp.StatusCode, body, err)
	}
}

func TestSendTaskFailureRoutesToCatch(t *testing.T) {
	ctx := context.Background()
	tokens := make(chan string, 1)
	approve := func(ctx context.Context, p []byte) ([]byte, error) {
		var in struct{ Token string }
		if err := jsonUnmarshal(p, &in); err != nil {
			return nil, err
		}
		tokens <- in.Token
		return []byte(`null`), nil
	}
	def := `{"StartAt": "A", "States": {
	  "A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
	        "Parameters": {"FunctionName": "ask", "Payload": {"Token.$": "$$.Task.Token"}},
	        "Catch": [{"ErrorEquals": ["Denied"], "ResultPath": "$.why", "Next": "No"}], "Next": "Yes"},
	  "Yes": {"Type": "Succeed"},
	  "No": {"Type": "Fail", "ErrorPath": "$.why.Error", "CausePath": "$.why.Cause"}}}`
	env := newEnv(t, envOpts{lambdas: map[string]LambdaFunc{"ask": func(ctx context.Context, p jsonRaw) (jsonRaw, error) { return approve(ctx, p) }}})
	ex := env.start(env.register("m", def, nil), "e", `{}`)
	token := recv(t, tokens, "token")
	if _, err := env.client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(token), Error: aws.String("Denied"), Cause: aws.String("not today")}); err != nil {
		t.Fatal(err)
	}
	d := env.waitDone(ex)
	if d.Status != StatusFailed || aws.ToString(d.Error) != "Denied" || aws.ToString(d.Cause) != "not today" {
		t.Fatalf("%s %v %v", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
	}
}

func TestGetExecutionHistory(t *testing.T) {
	ctx := context.Background()
	keel := newFakeKeel(t, reply("continue"), reply("done"))
	env := newEnv(t, envOpts{lambdas: keel.lambdas()})
	ex := env.start(env.register("keel-run", string(runASL(t)), runSubs), "run-h", `{"run_id": "run-h", "generation": 0}`)
	env.waitDone(ex)
	var all []types.HistoryEvent
	var next *string
	pages := 0
	for {
		out, err := env.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(ex), MaxResults: 7, NextToken: next})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, out.Events...)
		if out.NextToken == nil {
			break
		}
		next = out.NextToken
	}
	stored := env.history(ex)
	if len(all) != len(stored) || pages != (len(stored)+6)/7 {
		t.Fatalf("%d events in %d pages, stored %d", len(all), pages, len(stored))
	}
	for i, e := range all {
		if e.Id != int64(i+1) || e.PreviousEventId != int64(i) {
			t.Fatalf("event %d has id %d prev %d", i, e.Id, e.PreviousEventId)
		}
	}
	if all[0].Type != types.HistoryEventTypeExecutionStarted || all[0].ExecutionStartedEventDetails == nil ||
		!strings.Contains(aws.ToString(all[0].ExecutionStartedEventDetails.Input), "run-h") {
		t.Fatalf("first event %+v", all[0])
	}
	var sawSchedule bool
	for _, e := range all {
		if e.Type == types.HistoryEventTypeTaskScheduled {
			d := e.TaskScheduledEventDetails
			if d == nil || aws.ToString(d.ResourceType) != "lambda" || aws.ToString(d.Resource) != "invoke" || !strings.Contains(aws.ToString(d.Parameters), `"FunctionName":"keel-`) {
				t.Fatalf("TaskScheduled details %+v", d)
			}
			sawSchedule = true
		}
	}
	last := all[len(all)-1]
	if !sawSchedule || last.Type != types.HistoryEventTypeExecutionSucceeded || last.ExecutionSucceededEventDetails == nil || last.Timestamp == nil {
		t.Fatalf("last event %+v", last)
	}
	rev, err := env.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(ex), ReverseOrder: true, MaxResults: 1})
	if err != nil || rev.Events[0].Id != int64(len(all)) {
		t.Fatalf("reverse: %v %v", err, rev)
	}
}

// TestHistoryLimit runs a machine that never ends: event 25,000 is the
// ExecutionFailed with States.Runtime, exactly as Step Functions records it.
func TestHistoryLimit(t *testing.T) {
	if testing.Short() || raceEnabled {
		// One goroutine writing 12,500 transactions: the race detector
		// has nothing to find here and makes it slow.
		t.Skip("writes 25,000 events")
	}
	def := `{"StartAt": "Loop", "States": {"Loop": {"Type": "Pass", "Next": "Loop"}}}`
	env := newEnv(t, envOpts{})
	ex := env.start(env.register("m", def, nil), "spin", `{"spin": true}`)
	d := env.waitDone(ex)
	if d.Status != StatusFailed || aws.ToString(d.Error) != ErrRuntime || aws.ToString(d.Cause) != historyLimitCause {
		t.Fatalf("%s %v %v", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
	}
	out, err := env.client.GetExecutionHistory(context.Background(), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(ex), ReverseOrder: true, MaxResults: 2})
	if err != nil {
		t.Fatal(err)
	}
	if e := out.Events[0]; e.Id != HistoryLimit || e.Type != types.HistoryEventTypeExecutionFailed {
		t.Fatalf("last event %d %s", e.Id, e.Type)
	}
	if e := out.Events[1]; e.Id != HistoryLimit-1 || e.Type != types.HistoryEventTypePassStateExited {
		t.Fatalf("event before last %d %s", e.Id, e.Type)
	}
	fmt.Printf("history limit reached after %d events\n", HistoryLimit)
}
