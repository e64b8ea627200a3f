package roles_test

import (
	"testing"

	"github.com/keelrun/keel/internal/aws/roles"
)

func TestStatesErrorText(t *testing.T) {
	cases := []struct {
		name string
		in   roles.StatesError
		want string
	}{
		{"local executor's panic", roles.StatesError{Error: "string",
			Cause: `{"errorMessage":"handler panic: assignment to entry in nil map","errorType":"string"}`},
			"handler panic: assignment to entry in nil map"},
		{"aws-lambda-go's panic", roles.StatesError{Error: "string",
			Cause: `{"errorMessage":"boom","errorType":"string","stackTrace":[{"path":"x.go","line":3,"label":"f"}]}`},
			"handler panic: boom"},
		{"a function's error", roles.StatesError{Error: "RetryableError",
			Cause: `{"errorMessage":"retryable: store unavailable","errorType":"RetryableError"}`},
			"RetryableError: retryable: store unavailable"},
		{"a state's own error", roles.StatesError{Error: "States.Timeout", Cause: "approval timed out"},
			"States.Timeout: approval timed out"},
		{"JSON that is no envelope", roles.StatesError{Error: "States.Runtime", Cause: `{"a":1}`},
			`States.Runtime: {"a":1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.Text(); got != tc.want {
				t.Errorf("Text() = %q, want %q", got, tc.want)
			}
		})
	}
}
