package run_test

import (
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
)

func TestTellsOfPanic(t *testing.T) {
	cases := []struct {
		name string
		msg  string
		want bool
	}{
		{"tool panic", run.ToolPanicked("search", "index out of range"), true},
		{"quoted after a prefix", "dispatch to blog failed with an unknown outcome: " + run.ToolPanicked("publish", "nil map"), true},
		{"escaped a handler", run.HandlerPanicked("boom"), true},
		{"an ordinary error", "tool search failed: exit status 1", false},
		{"panicked without a tool", "the build panicked: out of memory", false},
		{"empty", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := run.TellsOfPanic(tc.msg); got != tc.want {
				t.Errorf("TellsOfPanic(%q) = %v, want %v", tc.msg, got, tc.want)
			}
		})
	}
}
