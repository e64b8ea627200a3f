package awslocal

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/stepfunctions"
)

const (
	versionsV1 = "internal/proof/awslocal/testdata/versions/v1"
	versionsV2 = "internal/proof/awslocal/testdata/versions/v2"
)

// versionsScenario deploys v1 of a program, starts a run of its pinned
// agent and one of its upgrading agent, both waiting for an approval of
// publish, and deploys v2 (new instructions: a compatible change) over
// the stack: a new step version behind the live alias, v1's retained.
// Approved, the pinned run's next Step invokes v1's version and its
// effect is dispatched by v1's code; the other's invokes the alias, moves
// to v2 after the check (agent_upgraded) and is dispatched by v2's code.
// A second pinned run's execution is stopped after the deploy (as a
// generation ends at rollover): the sweeper resumes it in a new execution,
// which starts on the alias, whose v2 step sends it back to v1's version
// untouched. The sweeper keeps v1's version while a run written by v1
// lives, and retires it once none does.
var versionsScenario = scenario{
	name: "versions",
	opts: func(d *destination) StackOptions {
		env := baseEnv(d)
		env["KEEL_SWEEP_MIN_AGE"] = "1ms" // the test plays EventBridge's rule
		return StackOptions{Env: env, Program: versionsV1}
	},
	play: func(t *testing.T, s *Stack, _ *destination) outcome {
		ctx := context.Background()
		ids := map[string]api.Run{}
		aps := map[string]api.Approval{}
		for _, key := range []string{"pinned", "moving", "restarted"} {
			agent := strings.Replace(key, "restarted", "pinned", 1)
			var r api.Run
			if st := s.api(t, http.MethodPost, "/v1/runs", `{"agent":"`+agent+`","input":"publish Q3"}`, key+"-"+s.Opts.Name, &r); st != http.StatusCreated {
				t.Fatalf("POST /v1/runs %s: %d", agent, st)
			}
			ids[key], aps[key] = r, awaitToolApproval(t, s, r.RunID, "publish")
		}
		// Before the deploy: what v2 would do with each run in flight,
		// asked of the deployed API.
		out := previewThroughAPI(t, s, versionsV2)
		t.Logf("v2 upgrade-check --api before the deploy:\n%s", out)
		for key, want := range map[string]string{"pinned": "pinned: its Steps keep running version", "restarted": "pinned: its Steps keep running version",
			"moving": "instructions changed"} {
			if l := previewLine(t, out, ids[key].RunID); !strings.Contains(l, want) || strings.Contains(l, "stop for a person") {
				t.Errorf("preview of the %s run: %q, want %q", key, l, want)
			}
		}
		step := s.Functions["step"].Name
		if err := s.Redeploy(ctx, versionsV2); err != nil {
			t.Fatal(err)
		}
		if vs, err := s.world.Lambda.Versions(ctx, step); err != nil || !slices.Equal(vs, []string{"1", "2"}) {
			t.Fatalf("step versions after the second deploy %v (%v), want 1 and 2", vs, err)
		}
		if rep := s.sweepReport(t); versionAction(rep, step+":1") != sweeper.VersionKept {
			t.Fatalf("while v1's runs live the sweep says %+v: want %s:1 kept", rep.Versions, step)
		}
		restarted := ids["restarted"].RunID
		resumed := restart(t, s, restarted)
		traces := map[string]Trace{}
		for _, key := range []string{"pinned", "moving", "restarted"} {
			id, exec := ids[key].RunID, ids[key].RunID
			if key == "restarted" {
				exec = resumed
			}
			decide(t, s, id, aps[key], "approve")
			traces[exec] = finish(t, s, exec)
			wantClose(t, traces[exec], "ExecutionSucceeded")
			if v := runStatus(t, s, id); v.Status != run.StatusCompleted {
				t.Fatalf("%s run %s (%s), want completed", key, v.Status, v.Error)
			}
		}
		pinned, moving := ids["pinned"].RunID, ids["moving"].RunID
		if got, want := stepFunctions(t, s, resumed), []string{"live", "1", "1"}; !slices.Equal(got, want) {
			t.Errorf("the resumed pinned run's Steps invoked %v, want %v (v2's live step sends it to v1's version)", got, want)
		}
		if b := dispatchedBy(t, s, restarted); b != "v1" {
			t.Errorf("the resumed pinned run's publish was dispatched by %q, want v1", b)
		}
		// Which code ran each Step, and which build dispatched the effect.
		if got, want := stepFunctions(t, s, pinned), []string{"live", "1"}; !slices.Equal(got, want) {
			t.Errorf("the pinned run's Steps invoked %v, want %v (its first on the alias, then v1's version)", got, want)
		}
		if got, want := stepFunctions(t, s, moving), []string{"live", "live"}; !slices.Equal(got, want) {
			t.Errorf("the moving run's Steps invoked %v, want %v", got, want)
		}
		if b := dispatchedBy(t, s, pinned); b != "v1" {
			t.Errorf("the pinned run's publish was dispatched by %q, want v1", b)
		}
		if b := dispatchedBy(t, s, moving); b != "v2" {
			t.Errorf("the moving run's publish was dispatched by %q, want v2", b)
		}
		if n := eventCounts(t, s, pinned); n["agent_upgraded"] != 0 || n["agent_upgrade_blocked"] != 0 {
			t.Errorf("pinned run's events %v: it must never have been checked against v2", n)
		}
		if n := eventCounts(t, s, moving); n["agent_upgraded"] != 1 {
			t.Errorf("moving run's events %v: want one agent_upgraded", n)
		}
		if rep := s.sweepReport(t); versionAction(rep, step+":1") != sweeper.VersionRetired || versionAction(rep, step+":2") != sweeper.VersionKept {
			t.Fatalf("once no run of v1 lives the sweep says %+v: want %s:1 retired, :2 kept", rep.Versions, step)
		}
		if vs, err := s.world.Lambda.Versions(ctx, step); err != nil || !slices.Equal(vs, []string{"2"}) {
			t.Fatalf("step versions after the sweep %v (%v), want 2 alone", vs, err)
		}
		return outcome{Executions: []string{pinned, moving, resumed}, Traces: traces}
	},
}

// restart stops the run's execution (as a generation ends) and plays the sweeper until it has
// resumed the run in a new one, waiting in AwaitApproval again with a new
// task token; it returns the new execution's name.
func restart(t *testing.T, s *Stack, runID string) string {
	t.Helper()
	ctx := context.Background()
	before, err := s.store(t).GetApproval(ctx, runID, awaitToolApproval(t, s, runID, "publish").ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SFN.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(s.executionARN(runID)), Cause: aws.String("scenario: the generation ends")}); err != nil {
		t.Fatal(err)
	}
	// moto's interpreter ends a stopped execution only when the state it
	// waits in returns: the wait is answered (its output is ignored; no
	// person decided). Keel's executor has ended it already and refuses
	// the token, as Step Functions does.
	_, _ = s.SFN.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(before.TaskToken), Output: aws.String("{}")})
	next := stepfunctions.ExecutionName(runID, 1)
	waitFor(t, "the sweeper to resume "+runID, func() (bool, error) {
		s.sweepReport(t)
		_, err := s.describe(t, next)
		return err == nil, nil
	})
	waitFor(t, "the resumed approval wait", func() (bool, error) {
		ap, err := s.store(t).GetApproval(ctx, runID, before.ID)
		return ap.TaskToken != "" && ap.TaskToken != before.TaskToken, err
	})
	return next
}

// sweepReport invokes the sweep function as the EventBridge rule does
// and returns its report.
func (s *Stack) sweepReport(t *testing.T) sweeper.Report {
	t.Helper()
	inv, err := s.world.Lambda.Invoke(context.Background(), s.Functions["sweep"].Name, []byte(`{"source":"aws.events"}`))
	if err != nil || inv.FunctionError != "" {
		t.Fatalf("sweep: %v %s %s", err, inv.FunctionError, inv.Payload)
	}
	var rep sweeper.Report
	if err := json.Unmarshal(inv.Payload, &rep); err != nil || rep.Errors != 0 {
		t.Fatalf("sweep answered %s (%v)", inv.Payload, err)
	}
	return rep
}

func versionAction(rep sweeper.Report, fn string) string {
	for _, v := range rep.Versions {
		if v.Function == fn {
			return v.Action
		}
	}
	return ""
}

// stepFunctions are the qualifiers of the functions an execution's Step
// states invoked, in order (the alias's name, or a version number).
func stepFunctions(t *testing.T, s *Stack, name string) []string {
	t.Helper()
	var out []string
	for _, e := range s.history(t, name) {
		if e.Type != sfntypes.HistoryEventTypeTaskScheduled || e.TaskScheduledEventDetails == nil {
			continue
		}
		var p struct {
			FunctionName string
			Payload      map[string]any
		}
		if err := json.Unmarshal([]byte(aws.ToString(e.TaskScheduledEventDetails.Parameters)), &p); err != nil {
			t.Fatalf("TaskScheduled parameters: %v", err)
		}
		if _, step := p.Payload["code"]; step {
			out = append(out, p.FunctionName[strings.LastIndexByte(p.FunctionName, ':')+1:])
		}
	}
	return out
}

// dispatchedBy is the build that dispatched runID's one operation: the
// test program's publish names it in its external id (BUILD/op).
func dispatchedBy(t *testing.T, s *Stack, runID string) string {
	t.Helper()
	ops, err := s.store(t).ListOperations(context.Background(), runID, false)
	if err != nil || len(ops) != 1 {
		t.Fatalf("operations of %s: %d (%v), want 1", runID, len(ops), err)
	}
	build, _, _ := strings.Cut(ops[0].ExternalID, "/")
	return build
}
