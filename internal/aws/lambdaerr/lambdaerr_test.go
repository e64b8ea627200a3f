package lambdaerr_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/keelrun/keel/internal/aws/lambdaerr"
	"github.com/keelrun/keel/internal/kernel/harness"
)

type valueErr struct{}

func (valueErr) Error() string { return "value" }

// named is an error with an ErrorType method, which aws-lambda-go ignores.
type named struct{}

func (*named) Error() string     { return "named" }
func (*named) ErrorType() string { return "Custom.Name" }

// cases are the errors a handler returns (or, for "panic", panics with).
var cases = map[string]any{
	"retryable": &harness.RetryableError{Err: errors.New("store down")},
	"fenced":    &harness.FencedError{RunID: "run_1"},
	"plain":     errors.New("plain"),
	"wrapped":   fmt.Errorf("step: %w", &harness.RetryableError{Err: errors.New("x")}),
	"value":     valueErr{},
	"method":    &named{},
	"invoke":    messages.InvokeResponse_Error{Type: "States.Custom", Message: "m"},
	"panic":     "boom",
}

// TestMain plays the Lambda function when the parent test starts it.
func TestMain(m *testing.M) {
	if os.Getenv("KEEL_LAMBDAERR_CHILD") == "1" {
		lambda.Start(func(_ context.Context, in struct{ Case string }) (string, error) {
			v := cases[in.Case]
			if in.Case == "panic" {
				panic(v)
			}
			return "", v.(error)
		})
		return
	}
	os.Exit(m.Run())
}

// TestTypeMatchesAWSLambdaGo runs a real aws-lambda-go function against a
// fake Lambda Runtime API and requires Type to give, for every case, the
// errorType the function reported.
func TestTypeMatchesAWSLambdaGo(t *testing.T) {
	names := make([]string, 0, len(cases))
	for n := range cases {
		if n != "panic" {
			names = append(names, n)
		}
	}
	names = append(names, "panic") // last: the function exits after it
	var mu sync.Mutex
	got := map[string]string{}
	next := 0
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next":
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			if i >= len(names) {
				<-r.Context().Done()
				return
			}
			w.Header().Set("Lambda-Runtime-Aws-Request-Id", names[i])
			w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
			w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:step")
			fmt.Fprintf(w, `{"Case":%q}`, names[i])
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/error"):
			id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/2018-06-01/runtime/invocation/"), "/error")
			b, _ := io.ReadAll(r.Body)
			var body struct {
				ErrorType string `json:"errorType"`
			}
			_ = json.Unmarshal(b, &body)
			mu.Lock()
			got[id] = body.ErrorType
			if len(got) == len(names) {
				close(done)
			}
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KEEL_LAMBDAERR_CHILD=1", "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the function reported %d of %d errors: %v", len(got), len(names), got)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("aws-lambda-go reported: %v", got)
	for _, n := range names {
		if want := got[n]; lambdaerr.Type(cases[n]) != want {
			t.Errorf("%s: Type = %q, aws-lambda-go reports %q", n, lambdaerr.Type(cases[n]), want)
		}
	}
	for n, want := range map[string]string{"retryable": "RetryableError", "fenced": "FencedError"} {
		if got[n] != want {
			t.Errorf("%s: aws-lambda-go reports %q, the state machine matches %q", n, got[n], want)
		}
	}
}
