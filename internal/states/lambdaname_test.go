package states

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/lambdaerr"
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
			e := &Executor{lambdas: map[string]LambdaFunc{"f": func(context.Context, json.RawMessage) (json.RawMessage, error) {
				if err, ok := tc.fail.(error); ok {
					return nil, err
				}
				panic(tc.fail)
			}}}
			_, se := e.invokeLambda(context.Background(), json.RawMessage(`{"FunctionName":"f"}`))
			if se == nil || se.Name != tc.want || se.Name != lambdaerr.Type(tc.fail) {
				t.Fatalf("state error %+v, want name %q", se, tc.want)
			}
		})
	}
}
