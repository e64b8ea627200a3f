package main

import (
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/testbin"
)

// A run long enough in Steps to roll over: a Step budget of a nanosecond
// makes every iteration a Step of its own (the harness looks at its
// deadline after each iteration, never before the first), so 600
// iterations pass the state machine's 500 Steps per generation whatever
// the machine's speed; a millisecond let a fast machine fit two. The run completes with
// every tool call made once, across two executions.
func TestLongRunRollsOver(t *testing.T) {
	testbin.SkipShort(t, "600 Steps through the local state machine")
	res, err := Run(t.Context(), Config{N: 600, StepBudget: time.Nanosecond, Dir: t.TempDir(), Marks: []int{100, 600}, Window: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != run.StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
	if res.Generations < 2 {
		t.Fatalf("%d generations, want a rollover: %v", res.Generations, res.History)
	}
	if len(res.Marks) != 2 {
		t.Fatalf("marks %+v", res.Marks)
	}
	t.Logf("%d generations, history per generation at most %d events", res.Generations, res.MaxHistory)
}
