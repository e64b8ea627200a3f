package sweeper_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/stepfunctions"
)

// executions is a table of execution statuses by name. The end-to-end
// tests (internal/compose, both stores, the local executor behind the
// Step Functions API) cover the real thing; this one pins the decisions.
type executions struct {
	mu      sync.Mutex
	status  map[string]string
	started []string
}

func (x *executions) ExecutionStatus(_ context.Context, name string) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	st, ok := x.status[name]
	if !ok {
		return "", sweeper.ErrNoExecution
	}
	return st, nil
}

func (x *executions) StartExecution(_ context.Context, name, _ string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.status[name] = sweeper.StatusRunning
	x.started = append(x.started, name)
	return nil
}

type finalizer struct{ runs []string }

func (f *finalizer) Finalize(_ context.Context, runID, _ string) (run.Run, error) {
	f.runs = append(f.runs, runID)
	return run.Run{ID: runID}, nil
}

func TestSweepDecisions(t *testing.T) {
	const id = "run_sweep1"
	cases := []struct {
		name        string
		execs       map[string]string
		minAge      time.Duration
		leased      bool
		child       bool
		wantStarted []string
		wantAction  string
	}{
		{"no execution: started under the run id", map[string]string{}, 0, false, false, []string{id}, sweeper.ActionStarted},
		{"running: left alone", map[string]string{id: "RUNNING"}, 0, false, false, nil, ""},
		{"rolled over, next generation running: left alone", map[string]string{id: "SUCCEEDED", id + "-g1": "RUNNING"}, 0, false, false, nil, ""},
		{"stopped: resumed in the next generation", map[string]string{id: "ABORTED"}, 0, false, false, []string{id + "-g1"}, sweeper.ActionResumed},
		{"rolled over then failed: resumed after the latest", map[string]string{id: "SUCCEEDED", id + "-g1": "FAILED"}, 0, false, false, []string{id + "-g2"}, sweeper.ActionResumed},
		{"too young: left alone", map[string]string{}, time.Hour, false, false, nil, ""},
		{"a child run with no execution, however young: started (nothing else starts it on AWS)", map[string]string{}, time.Hour, false, true, []string{id}, sweeper.ActionStarted},
		{"a child run's execution running: left alone", map[string]string{id: "RUNNING"}, time.Hour, false, true, nil, ""},
		{"stopped but a worker holds the lease: left alone", map[string]string{id: "ABORTED"}, 0, true, false, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			r := run.Run{ID: id, SessionID: "s", Owner: "o", Agent: "a", Request: "r",
				InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
			if tc.child {
				r.Caller = run.Caller{RunID: "run_parent", PlanItemID: "item_1", OperationID: "op_1", Depth: 1}
			}
			if _, _, err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			if tc.leased {
				if _, err := st.AcquireLease(ctx, id, "worker", time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			x := &executions{status: tc.execs}
			sw := &sweeper.Sweeper{Store: st, Executions: x, Finalizer: &finalizer{}, MinAge: tc.minAge}
			rep, err := sw.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(x.started) != len(tc.wantStarted) || (len(x.started) > 0 && x.started[0] != tc.wantStarted[0]) {
				t.Fatalf("started %v, want %v", x.started, tc.wantStarted)
			}
			if tc.wantAction == "" {
				if len(rep.Repairs) != 0 {
					t.Fatalf("repairs %+v, want none", rep.Repairs)
				}
				return
			}
			if len(rep.Repairs) != 1 || rep.Repairs[0].Action != tc.wantAction {
				t.Fatalf("repairs %+v, want one %s", rep.Repairs, tc.wantAction)
			}
			evs, err := st.ReadEvents(ctx, id, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			if last := evs[len(evs)-1]; last.Type != run.EventRunSwept {
				t.Fatalf("last event %s, want run_swept", last.Type)
			}
			// Idempotent: the repaired run now has a running execution.
			if again, err := sw.Sweep(ctx); err != nil || len(again.Repairs) != 0 {
				t.Fatalf("second sweep %+v %v", again, err)
			}
		})
	}
}

func TestExecutionNaming(t *testing.T) {
	if got := stepfunctions.ExecutionName("run_1", 0); got != "run_1" {
		t.Fatal(got)
	}
	if got := stepfunctions.ExecutionName("run_1", 3); got != "run_1-g3" {
		t.Fatal(got)
	}
	// The bytes the API's start sends (roles.Starter), so that a start
	// racing it is the same execution.
	if got := stepfunctions.ExecutionInput("run_1", 0); got != `{"generation":0,"run_id":"run_1"}` {
		t.Fatal(got)
	}
}
