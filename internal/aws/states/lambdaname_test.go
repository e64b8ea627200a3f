package states

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/aws/lambdaerr"
	"github.com/keelrun/keel/internal/kernel/harness"
)

// withErrorType has an ErrorType method, which aws-lambda-go ignores.
type withErrorType struct{}

func (*withErrorType) Error() string     { return "x" }
func (*withErrorType) ErrorType() string { return "Custom.Name" }

// TestLambdaErrorNamesAsOnAWS: the executor names a function's error (and a
// panic) with lambdaerr.Type, whose names are checked against a real
// aws-lambda-go function in package lambdaerr.
func TestLambdaErrorNamesAsOnAWS(t *testing.T) {
	cases := map[string]struct {
		fail any
		want string
	}{
		"retryable":    {&harness.RetryableError{Err: errors.New("x")}, "RetryableError"},
		"ErrorType()":  {&withErrorType{}, "withErrorType"},
		"errors.New":   {errors.New("x"), "errorString"},
		"panic string": {"boom", "string"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			e := &Executor{log: slog.New(slog.NewTextHandler(&logs, nil)), lambdas: map[string]LambdaFunc{"f": func(context.Context, json.RawMessage) (json.RawMessage, error) {
				if err, ok := tc.fail.(error); ok {
					return nil, err
				}
				panic(tc.fail)
			}}}
			_, se := e.invokeLambda(context.Background(), json.RawMessage(`{"FunctionName":"f"}`))
			if se == nil || se.Name != tc.want || se.Name != lambdaerr.Type(tc.fail) {
				t.Fatalf("state error %+v, want name %q", se, tc.want)
			}
			// A panic is logged once, with its stack; an error is the
			// caller's to report.
			_, panicked := tc.fail.(string)
			if got := strings.Count(logs.String(), "lambda handler panicked"); got != map[bool]int{true: 1}[panicked] ||
				panicked && !strings.Contains(logs.String(), "lambdaname_test.go") {
				t.Errorf("log:\n%s", logs.String())
			}
		})
	}
}
