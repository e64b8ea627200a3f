package roles_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/testbin"
	"github.com/keelrun/keel/stepfunctions"
)

// executions is a state machine's executions by name: a status each, and
// how many more reads a RUNNING one answers before it ends.
type executions struct {
	mu       sync.Mutex
	status   map[string]string
	endAfter map[string]int
	started  []string
}

func (x *executions) ExecutionStatus(_ context.Context, name string) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	st, ok := x.status[name]
	if !ok {
		return "", sweeper.ErrNoExecution
	}
	if st == "RUNNING" && x.endAfter[name] >= 0 {
		if x.endAfter[name] == 0 {
			x.status[name] = "SUCCEEDED"
		}
		x.endAfter[name]--
	}
	return st, nil
}

func (x *executions) StartExecution(_ context.Context, _, name, _ string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.status[name]; ok {
		return errors.New("ExecutionAlreadyExists")
	}
	x.status[name] = "RUNNING"
	x.started = append(x.started, name)
	return nil
}

// TestContinueRunWaitsOutAnEndingExecution: a person settles while the
// execution that stopped the run is still finalizing; ContinueRun waits
// for it to end and starts the next generation, instead of taking it for
// one that drives the run. One that keeps running past the bound is left
// to drive it.
func TestContinueRunWaitsOutAnEndingExecution(t *testing.T) {
	gen := func(g int) string { return stepfunctions.ExecutionName("run_1", g) }
	cases := []struct {
		name     string
		status   map[string]string
		endAfter map[string]int
		want     []string
	}{
		{"no execution yet", map[string]string{}, nil, []string{gen(0)}},
		{"the last one ended", map[string]string{gen(0): "SUCCEEDED", gen(1): "FAILED"}, nil, []string{gen(2)}},
		{"the last one is finalizing", map[string]string{gen(0): "SUCCEEDED", gen(1): "RUNNING"}, map[string]int{gen(1): 3}, []string{gen(2)}},
		{"one keeps running", map[string]string{gen(0): "RUNNING"}, map[string]int{gen(0): -1}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == nil {
				testbin.SkipShort(t, "waits out ContinueRun's whole bound, about ten seconds")
			}
			x := &executions{status: tc.status, endAfter: tc.endAfter}
			if x.endAfter == nil {
				x.endAfter = map[string]int{}
			}
			s := roles.Starter{Executions: x, StateMachineARN: "arn", Statuses: x}
			if err := s.ContinueRun(context.Background(), "run_1"); err != nil {
				t.Fatal(err)
			}
			if len(x.started) != len(tc.want) || (len(tc.want) > 0 && x.started[0] != tc.want[0]) {
				t.Fatalf("started %v, want %v", x.started, tc.want)
			}
		})
	}
}
