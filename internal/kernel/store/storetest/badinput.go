package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// testBadInput: malformed input gets a clear error naming what is wrong, and
// leaves every stored record as it was.
func testBadInput(t *testing.T, e *env) {
	r, tok := e.richRun()
	big := func(n int) string { return strings.Repeat("x", n) }
	bigJSON := func(n int) json.RawMessage { return json.RawMessage(`"` + big(n) + `"`) }
	step := func(mod func(c *store.Commit)) func() error {
		return func() error {
			c := store.Commit{RunID: r.ID, Token: tok, Events: []run.Event{ev(run.EventTurnStarted, "")},
				Run: &store.RunPatch{StepsDelta: 1}}
			mod(&c)
			_, err := e.s.Commit(e.ctx, c)
			return err
		}
	}
	cases := []struct {
		name string
		call func() error
		want error
		// mention is a word the error message must contain, so a caller
		// learns which field was wrong.
		mention string
	}{
		{"CreateRunEmptyID", func() error {
			_, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.ID = "" }))
			return err
		}, store.ErrInvalid, "id"},
		{"CreateRunEmptyOwner", func() error {
			_, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.Owner = "" }))
			return err
		}, store.ErrInvalid, "owner"},
		{"CreateRunEmptySession", func() error {
			_, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.SessionID = "" }))
			return err
		}, store.ErrInvalid, "session"},
		{"CreateRunUnknownPolicy", func() error {
			_, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.InputPolicy = "shout" }))
			return err
		}, store.ErrInvalid, "policy"},
		{"CreateRunOversizedRequest", func() error {
			_, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.Request = big(store.MaxText + 1) }))
			return err
		}, store.ErrInvalid, "request"},
		{"CreateRunNegativeLimit", func() error {
			_, _, err := e.s.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.Limits.MaxTokens = -1 }))
			return err
		}, store.ErrInvalid, "limit"},
		{"GetRunEmptyID", func() error { _, err := e.s.GetRun(e.ctx, ""); return err }, store.ErrInvalid, "run id"},
		{"LeaseEmptyOwner", func() error { _, err := e.s.AcquireLease(e.ctx, r.ID, "", time.Minute); return err }, store.ErrInvalid, "owner"},
		{"CommitEmptyRunID", step(func(c *store.Commit) { c.RunID = "" }), store.ErrInvalid, "run id"},
		{"CommitUnknownRun", step(func(c *store.Commit) { c.RunID = "run_nope" }), store.ErrNotFound, "run_nope"},
		{"CommitUnknownStatus", step(func(c *store.Commit) { c.Run.Status = "paused" }), store.ErrInvalid, "status"},
		{"CommitNegativeSteps", step(func(c *store.Commit) { c.Run.StepsDelta = -1 }), store.ErrInvalid, "steps"},
		{"CommitOversizedOutput", step(func(c *store.Commit) { c.Run.Output = str(big(store.MaxText + 1)) }), store.ErrInvalid, "output"},
		{"EventEmptyType", step(func(c *store.Commit) { c.Events = append(c.Events, run.Event{}) }), store.ErrInvalid, "type"},
		{"EventOversizedData", step(func(c *store.Commit) {
			c.Events = append(c.Events, run.Event{Type: run.EventToolCompleted, Data: bigJSON(store.MaxEventData)})
		}), store.ErrInvalid, "data"},
		{"EventDataNotJSON", step(func(c *store.Commit) {
			c.Events = append(c.Events, run.Event{Type: run.EventToolCompleted, Data: json.RawMessage(`{not json`)})
		}), store.ErrInvalid, "JSON"},
		{"CheckpointEmptyID", step(func(c *store.Commit) { c.Checkpoint = &run.Checkpoint{State: []byte("s")} }), store.ErrInvalid, "checkpoint id"},
		{"CheckpointOversized", step(func(c *store.Commit) {
			c.Checkpoint = &run.Checkpoint{ID: "cp_big", State: []byte(big(store.MaxInlineState + 1))}
		}), store.ErrInvalid, "state"},
		{"CheckpointOtherRun", step(func(c *store.Commit) {
			c.Checkpoint = &run.Checkpoint{ID: "cp_x", RunID: "run_other", State: []byte("s")}
		}), store.ErrInvalid, "run_other"},
		{"PlanItemEmptyID", step(func(c *store.Commit) {
			c.PlanItems = []run.PlanItem{planItem("", 1, `{}`, run.ModeMutating)}
		}), store.ErrInvalid, "plan item id"},
		{"PlanItemUnknownMode", step(func(c *store.Commit) {
			c.PlanItems = []run.PlanItem{planItem("p5", 1, `{}`, "yolo")}
		}), store.ErrInvalid, "mode"},
		{"PlanItemUnknownStatus", step(func(c *store.Commit) {
			pi := planItem("p5", 1, `{}`, run.ModeMutating)
			pi.Status = "dreaming"
			c.PlanItems = []run.PlanItem{pi}
		}), store.ErrInvalid, "status"},
		{"PlanItemArgsNotJSON", step(func(c *store.Commit) {
			c.PlanItems = []run.PlanItem{planItem("p5", 1, `{"a":`, run.ModeMutating)}
		}), store.ErrInvalid, "args"},
		{"PlanItemOversizedArgs", step(func(c *store.Commit) {
			c.PlanItems = []run.PlanItem{{ID: "p5", Tool: "t", Mode: run.ModeMutating, Args: bigJSON(store.MaxArgs)}}
		}), store.ErrInvalid, "args"},
		{"PlanItemWrongHash", step(func(c *store.Commit) {
			pi := planItem("p5", 1, `{"a":1}`, run.ModeMutating)
			pi.ArgsHash = "0000"
			c.PlanItems = []run.PlanItem{pi}
		}), store.ErrInvalid, "hash"},
		{"PlanItemTwice", step(func(c *store.Commit) {
			c.PlanItems = []run.PlanItem{planItem("p5", 1, `{}`, run.ModeMutating), planItem("p5", 2, `{}`, run.ModeMutating)}
		}), store.ErrInvalid, "twice"},
		{"OperationEmptyID", step(func(c *store.Commit) {
			c.NewOperations = []run.Operation{{Args: json.RawMessage(`{}`)}}
		}), store.ErrInvalid, "operation id"},
		{"OperationNoHash", step(func(c *store.Commit) { c.NewOperations = []run.Operation{{ID: "op9"}} }), store.ErrInvalid, "hash"},
		{"OperationNotPending", step(func(c *store.Commit) {
			c.NewOperations = []run.Operation{{ID: "op9", Args: json.RawMessage(`{}`), Status: run.OpSucceeded}}
		}), store.ErrInvalid, "pending"},
		{"OperationUpdateBadStatus", step(func(c *store.Commit) {
			c.OperationUpdates = []store.OperationUpdate{{ID: "op1", Status: run.OpPending}}
		}), store.ErrInvalid, "status"},
		{"OperationUpdateUnknownStatus", step(func(c *store.Commit) {
			c.OperationUpdates = []store.OperationUpdate{{ID: "op1", Status: "maybe"}}
		}), store.ErrInvalid, "status"},
		{"OperationCreatedAndUpdated", step(func(c *store.Commit) {
			c.NewOperations = []run.Operation{{ID: "op9", Args: json.RawMessage(`{}`)}}
			c.OperationUpdates = []store.OperationUpdate{{ID: "op9", Status: run.OpSucceeded}}
		}), store.ErrInvalid, "twice"},
		{"ApprovalUnknownMode", step(func(c *store.Commit) {
			c.NewApprovals = []run.Approval{{ID: "ap9", Tool: "t", Mode: "sometimes", Args: json.RawMessage(`{}`)}}
		}), store.ErrInvalid, "mode"},
		{"ApprovalEmptyTool", step(func(c *store.Commit) {
			c.NewApprovals = []run.Approval{{ID: "ap9", Mode: run.ModeMutating, Args: json.RawMessage(`{}`)}}
		}), store.ErrInvalid, "tool"},
		{"CommitNegativeUsed", step(func(c *store.Commit) { c.Used.Tokens = -1 }), store.ErrInvalid, "used"},
		{"CommitNegativeReleased", step(func(c *store.Commit) { c.Released.ToolCalls = -1 }), store.ErrInvalid, "released"},
		{"AppendNoEvents", func() error { _, err := e.s.AppendEvents(e.ctx, r.ID, nil); return err }, store.ErrInvalid, "events"},
		{"AppendBadType", func() error {
			_, err := e.s.AppendEvents(e.ctx, r.ID, []run.Event{{Type: "Tool Done!"}})
			return err
		}, store.ErrInvalid, "type"},
		{"ReadEventsEmptyRun", func() error { _, err := e.s.ReadEvents(e.ctx, "", 0, 10); return err }, store.ErrInvalid, "run id"},
		{"ReadEventsNegativeLimit", func() error { _, err := e.s.ReadEvents(e.ctx, r.ID, 0, -1); return err }, store.ErrInvalid, "limit"},
		{"DecideEmptyHash", func() error {
			_, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap1", Approve: true, DecidedBy: "c"})
			return err
		}, store.ErrInvalid, "hash"},
		{"DecideNobody", func() error {
			_, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap1", Approve: true, ArgsHash: "x"})
			return err
		}, store.ErrInvalid, "decided by"},
		{"AttachEmptyToken", func() error { _, err := e.s.AttachTaskToken(e.ctx, r.ID, "ap1", ""); return err }, store.ErrInvalid, "token"},
		{"InputEmpty", func() error { _, err := e.s.EnqueueInput(e.ctx, r.ID, ""); return err }, store.ErrInvalid, "text"},
		{"InputOversized", func() error { _, err := e.s.EnqueueInput(e.ctx, r.ID, big(store.MaxText+1)); return err }, store.ErrInvalid, "text"},
		{"InputUnknownRun", func() error { _, err := e.s.EnqueueInput(e.ctx, "run_nope", "hi"); return err }, store.ErrNotFound, "run_nope"},
		{"CancelEmptyBy", func() error { _, _, err := e.s.RequestCancel(e.ctx, r.ID, ""); return err }, store.ErrInvalid, "by"},
		{"HasGrantEmptySession", func() error { _, err := e.s.HasGrant(e.ctx, "", "t"); return err }, store.ErrInvalid, "session"},
		{"ListInputsUnknownRun", func() error { _, err := e.s.ListInputs(e.ctx, "run_nope", false); return err }, store.ErrNotFound, "run_nope"},
		{"ListApprovalsUnknownRun", func() error { _, err := e.s.ListApprovals(e.ctx, "run_nope"); return err }, store.ErrNotFound, "run_nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snap(e.s, r.ID)
			runsBefore, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{})
			must(t, err)
			err = tc.call()
			wantErr(t, err, tc.want)
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.mention)) {
				t.Fatalf("error %q does not mention %q", err, tc.mention)
			}
			e.sameSnap(before, e.snap(e.s, r.ID))
			runsAfter, err := e.s.ListRuns(e.ctx, store.ListRunsQuery{})
			must(t, err)
			if len(runsAfter.Runs) != len(runsBefore.Runs) {
				t.Fatalf("runs: %d before, %d after", len(runsBefore.Runs), len(runsAfter.Runs))
			}
		})
	}
	t.Run("ValidStepStillWorks", func(t *testing.T) {
		must(t, step(func(*store.Commit) {})())
	})
}
