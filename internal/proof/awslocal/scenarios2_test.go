package awslocal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

var denyScenario = scenario{
	name: "deny",
	opts: func(d *destination) StackOptions { return StackOptions{Env: baseEnv(d)} },
	play: func(t *testing.T, s *Stack, dest *destination) outcome {
		runID := createRun(t, s, "deny-"+s.Opts.Name)
		ap := awaitApproval(t, s, runID)
		decide(t, s, runID, ap, "deny")
		tr := finish(t, s, runID)
		v := runStatus(t, s, runID)
		if !v.Status.Terminal() {
			t.Errorf("run %s after the execution closed", v.Status)
		}
		wantPublished(t, dest, 0)
		n := eventCounts(t, s, runID)
		if n[run.EventApprovalDenied] != 1 || n[run.EventOpIntent] != 0 {
			t.Errorf("events %v: want one approval_denied and no operation", n)
		}
		return outcome{Executions: []string{runID}, Traces: map[string]Trace{runID: tr}}
	},
}

var cancelScenario = scenario{
	name: "cancel",
	opts: func(d *destination) StackOptions { return StackOptions{Env: baseEnv(d)} },
	play: func(t *testing.T, s *Stack, dest *destination) outcome {
		runID := createRun(t, s, "cancel-"+s.Opts.Name)
		awaitApproval(t, s, runID)
		if st := s.api(t, http.MethodPost, "/v1/runs/"+runID+"/cancel", `{}`, "", nil); st/100 != 2 {
			t.Fatalf("cancel: %d", st)
		}
		tr := finish(t, s, runID)
		wantClose(t, tr, "ExecutionSucceeded")
		if v := runStatus(t, s, runID); v.Status != run.StatusCancelled {
			t.Errorf("run %s, want cancelled", v.Status)
		}
		wantPublished(t, dest, 0)
		if n := eventCounts(t, s, runID); n[run.EventOpIntent] != 0 {
			t.Errorf("events %v: an operation after the cancel", n)
		}
		return outcome{Executions: []string{runID}, Traces: map[string]Trace{runID: tr}}
	},
}

// killScenario: the step function's sandbox (emulator and bootstrap, one
// process group) is SIGKILLed while the step is inside publish_report's
// call — after the destination recorded the publication, before the step
// heard the answer. Lambda answers the pending Invoke with a service error
// and starts a new sandbox; the Step state's Retry invokes again, and the
// recovered step finds the publication instead of sending it twice.
var killScenario = killInsidePublish("kill-step", KillSandbox)

// crashScenario: only the step function's runtime (the bootstrap) is
// SIGKILLed inside publish_report's call, as an out-of-memory kill takes
// it, and the sandbox stays. Lambda answers the pending Invoke with the
// function's unhandled error (Runtime.ExitError under the emulator; AWS
// documents such errors in Step Functions as Lambda.Unknown), and the
// next Invoke starts a fresh runtime in the same sandbox. The Step
// state's retrier for runtime crashes invokes it again, and the recovered
// step finds the publication instead of sending it twice. Before that
// retrier both interpreters finalized the run as failed.
var crashScenario = killInsidePublish("crash-runtime", KillRuntime)

// killInsidePublish is a scenario that kills the step function's code
// (the target's Kill) when the destination records the publication, and
// then wants the run completed with one publication, the operation's
// outcome recorded, one run_completed, and one of the target's
// KillErrors among the execution's retried task failures.
func killInsidePublish(name string, kind KillKind) scenario {
	return scenario{
		name: name,
		opts: func(d *destination) StackOptions { return StackOptions{Env: baseEnv(d)} },
		play: func(t *testing.T, s *Stack, dest *destination) outcome {
			runID := createRun(t, s, name+"-"+s.Opts.Name)
			ap := awaitApproval(t, s, runID)
			step := s.Functions["step"]
			killed := make(chan string, 1)
			dest.mu.Lock()
			dest.onPost = func() {
				what, err := s.world.Target.Kill(context.Background(), step, kind)
				if err != nil {
					t.Errorf("kill the step %s: %v", kind, err)
				}
				killed <- what
			}
			dest.mu.Unlock()
			decide(t, s, runID, ap, "approve")
			tr := finish(t, s, runID)
			select {
			case what := <-killed:
				t.Logf("killed the step %s (%s) inside publish_report", kind, what)
			default:
				t.Fatal("the destination never saw the publication: nothing was killed")
			}
			wantClose(t, tr, "ExecutionSucceeded")
			if v := runStatus(t, s, runID); v.Status != run.StatusCompleted {
				t.Errorf("run %s, want completed", v.Status)
			}
			wantPublished(t, dest, 1)
			r, seen := Retries(s.history(t, runID)), 0
			wantErrs := s.world.Target.KillErrors(kind)
			for _, e := range wantErrs {
				seen += r[e]
			}
			if seen == 0 {
				t.Errorf("task failures %v: want one of %v, retried", r, wantErrs)
			}
			n := eventCounts(t, s, runID)
			// The recovered step learns the outcome by a lookup at the
			// destination (op_reconciled) or, when the lost invocation had
			// recorded it, finds op_succeeded; the one publication above is
			// what says nothing was sent twice.
			if n[run.EventOpSucceeded]+n[run.EventOpReconciled] == 0 || n[run.EventRunCompleted] != 1 {
				t.Errorf("events %v: want the operation's outcome recorded (op_succeeded or op_reconciled) and one run_completed", n)
			}
			return outcome{Executions: []string{runID}, Traces: map[string]Trace{runID: tr}}
		},
	}
}

// rolloverScenario lowers the loop bound to 2 and holds the read-only
// tools past the step budget, so each Step returns "continue" and the
// third decision is taken in generation 1 ({run}-g1).
var rolloverScenario = scenario{
	name: "rollover",
	opts: func(d *destination) StackOptions {
		env := baseEnv(d)
		env["KEEL_STEP_MARGIN"] = "899s" // a 1s step budget (the minimum)
		env["KEEL_TOOL_DELAY"] = "collect_documents=1500ms,analyze_documents=1500ms"
		return StackOptions{Env: env, LoopBound: 2}
	},
	play: func(t *testing.T, s *Stack, dest *destination) outcome {
		runID := createRun(t, s, "rollover-"+s.Opts.Name)
		g0 := finish(t, s, runID)
		wantClose(t, g0, "ExecutionSucceeded")
		if last := g0.States[len(g0.States)-1]; last != "RolledOver" {
			for _, e := range s.history(t, runID) {
				if e.TaskFailedEventDetails != nil {
					t.Logf("task failed: %s: %s", deref(e.TaskFailedEventDetails.Error), deref(e.TaskFailedEventDetails.Cause))
				}
			}
			t.Fatalf("generation 0 ended in %s, want RolledOver: %s", last, g0)
		}
		g1name := runID + "-g1"
		ap := awaitApproval(t, s, runID)
		decide(t, s, runID, ap, "approve")
		traces := map[string]Trace{runID: g0}
		names := []string{runID, g1name}
		// A generation may roll over again before it finishes.
		for i := 1; ; i++ {
			name := fmt.Sprintf("%s-g%d", runID, i)
			tr := finish(t, s, name)
			traces[name] = tr
			if i > 1 {
				names = append(names, name)
			}
			steps := 0
			for _, st := range tr.States {
				if strings.HasPrefix(st, "Step=") {
					steps++
				}
			}
			if tr.States[len(tr.States)-1] == "RolledOver" && steps != 2 {
				t.Errorf("generation %d rolled over after %d Step decisions, want the lowered bound 2: %s", i, steps, tr)
			}
			if tr.States[len(tr.States)-1] != "RolledOver" {
				wantClose(t, tr, "ExecutionSucceeded")
				break
			}
			if i > 6 {
				t.Fatalf("still rolling over at generation %d", i)
			}
		}
		if v := runStatus(t, s, runID); v.Status != run.StatusCompleted {
			t.Errorf("run %s, want completed", v.Status)
		}
		wantPublished(t, dest, 1)
		return outcome{Executions: names, Traces: traces}
	},
}

// scheduleScenario delivers the template's schedule target input (its
// <aws.scheduler.*> context attributes filled as EventBridge Scheduler
// fills them) to the schedule function twice, as Scheduler's at-least-once
// delivery may: one run, one execution.
var scheduleScenario = scenario{
	name: "schedule-twice",
	opts: func(d *destination) StackOptions { return StackOptions{Env: baseEnv(d)} },
	play: func(t *testing.T, s *Stack, dest *destination) outcome {
		id, err := s.world.Template.Only("AWS::Scheduler::Schedule", "Scheduling")
		if err != nil {
			t.Fatal(err)
		}
		target, _ := s.world.Template.Resources[id].Properties["Target"].(map[string]any)
		input, _ := target["Input"].(string)
		if input == "" {
			t.Fatalf("schedule %s has no target Input", id)
		}
		arn := fmt.Sprintf("arn:aws:scheduler:%s:%s:schedule/default/%s", Region, Account, s.physical.Refs[id])
		at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC).Format(time.RFC3339)
		event := strings.NewReplacer("<aws.scheduler.schedule-arn>", arn, "<aws.scheduler.scheduled-time>", at).Replace(input)
		var ids []string
		for range 2 {
			inv, err := s.world.Lambda.Invoke(context.Background(), s.Functions["schedule"].Name, []byte(event))
			if err != nil || inv.FunctionError != "" {
				t.Fatalf("schedule: %v %s %s", err, inv.FunctionError, inv.Payload)
			}
			var out struct {
				RunID string `json:"run_id"`
			}
			if err := json.Unmarshal(inv.Payload, &out); err != nil || out.RunID == "" {
				t.Fatalf("schedule answered %s (%v)", inv.Payload, err)
			}
			ids = append(ids, out.RunID)
		}
		if ids[0] != ids[1] {
			t.Fatalf("two deliveries made runs %v, want one", ids)
		}
		runID := ids[0]
		page, err := s.store(t).ListRuns(context.Background(), store.ListRunsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Runs) != 1 {
			t.Errorf("%d runs in the table, want 1", len(page.Runs))
		}
		if s.keel == nil { // Keel's executor serves no ListExecutions
			execs, err := s.listExecutions(t)
			if err != nil {
				t.Fatal(err)
			}
			if len(execs) != 1 || execs[0] != runID {
				t.Errorf("executions %v, want one named %s", execs, runID)
			}
		}
		// The run is the scheduler's: its owner approves it through the API.
		s.principal = "scheduler"
		ap := awaitApproval(t, s, runID)
		decide(t, s, runID, ap, "approve")
		tr := finish(t, s, runID)
		wantClose(t, tr, "ExecutionSucceeded")
		wantPublished(t, dest, 1)
		return outcome{Executions: []string{runID}, Traces: map[string]Trace{runID: tr}}
	},
}
