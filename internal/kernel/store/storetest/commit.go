package storetest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func planItem(id string, order int64, args string, mode run.Mode) run.PlanItem {
	return run.PlanItem{ID: id, Order: order, Tool: "web_fetch", Args: json.RawMessage(args), Mode: mode, Status: run.PlanPending}
}

func testCommitStep(t *testing.T, e *env) {
	r, tok := e.leased()
	e.clock.Advance(time.Second)
	state := []byte(`{"messages":[{"role":"assistant","content":"hi"}]}`)
	items := []run.PlanItem{
		planItem("p2", 2, `{"url":"https://b.example"}`, run.ModeSafeReadonly),
		planItem("p1", 1, `{ "url" : "https://a.example", "depth": 1.0 }`, run.ModeMutating),
	}
	seqs, err := e.s.Commit(e.ctx, store.Commit{
		RunID: r.ID, Token: tok,
		Run: &store.RunPatch{Status: run.StatusRunning, Command: str("fetch a and b"), StepsDelta: 1},
		Events: []run.Event{
			ev(run.EventModelCallCompleted, `{"tokens":12}`),
			{Type: run.EventCheckpointWritten, Time: epoch.Add(time.Hour), PlanItemID: "p1"},
		},
		Checkpoint: &run.Checkpoint{ID: "cp1", Step: 1, State: state, WorkspaceVersion: "ws1"},
		PlanItems:  items,
	})
	must(t, err)
	if !reflect.DeepEqual(seqs, []int64{2, 3}) {
		t.Fatalf("seqs = %v, want [2 3]", seqs)
	}
	got, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if got.Status != run.StatusRunning || got.Command != "fetch a and b" || got.StepCount != 1 ||
		got.CheckpointID != "cp1" || got.LastSeq != 3 || !got.UpdatedAt.Equal(e.clock.Now()) ||
		got.Lease != r.Lease || got.Request != r.Request {
		t.Fatalf("run after commit: %s", dump(got))
	}
	evs := e.checkGapless(e.s, r.ID)
	if !evs[1].Time.Equal(e.clock.Now()) || !evs[2].Time.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("event times: zero must become now, a set time is kept: %s", dump(evs))
	}
	if evs[2].PlanItemID != "p1" || string(evs[1].Data) != `{"tokens":12}` || evs[1].Type != run.EventModelCallCompleted {
		t.Fatalf("events stored wrong: %s", dump(evs))
	}
	cp, err := e.s.GetCheckpoint(e.ctx, r.ID, "cp1")
	must(t, err)
	if string(cp.State) != string(state) || cp.Seq != 1 || cp.Step != 1 || cp.Size != int64(len(state)) ||
		cp.StateHash != run.HashBytes(state) || cp.RunID != r.ID || cp.WorkspaceVersion != "ws1" || !cp.CreatedAt.Equal(e.clock.Now()) {
		t.Fatalf("checkpoint = %s", dump(cp))
	}
	pis, err := e.s.ListPlanItems(e.ctx, r.ID)
	must(t, err)
	if len(pis) != 2 || pis[0].ID != "p1" || pis[1].ID != "p2" {
		t.Fatalf("plan items not in order: %s", dump(pis))
	}
	wantHash, err := run.ArgsHash([]byte(`{"depth":1,"url":"https://a.example"}`))
	must(t, err)
	if pis[0].ArgsHash != wantHash || string(pis[0].Args) != string(items[1].Args) || pis[0].Mode != run.ModeMutating || pis[0].RunID != r.ID {
		t.Fatalf("plan item p1 = %s (want exact args kept and canonical hash %s)", dump(pis[0]), wantHash)
	}

	t.Run("SecondStep", func(t *testing.T) {
		e.clock.Advance(time.Second)
		items[0].Status = run.PlanCompleted
		items[0].Result = json.RawMessage(`{"ok":true}`)
		seqs, err := e.s.Commit(e.ctx, store.Commit{
			RunID: r.ID, Token: tok,
			Run:        &store.RunPatch{StepsDelta: 1, Output: str("partial")},
			Events:     []run.Event{ev(run.EventToolCompleted, ""), ev(run.EventCheckpointWritten, "")},
			Checkpoint: &run.Checkpoint{ID: "cp2", Parent: "cp1", Step: 2, StateRef: "runs/x/checkpoints/cp2/state", Size: 4096},
			PlanItems:  items[:1],
		})
		must(t, err)
		if !reflect.DeepEqual(seqs, []int64{4, 5}) {
			t.Fatalf("seqs = %v", seqs)
		}
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		if got.Status != run.StatusRunning || got.StepCount != 2 || got.CheckpointID != "cp2" || got.Output != "partial" || got.Command != "fetch a and b" {
			t.Fatalf("run after second step: %s", dump(got))
		}
		cp, err := e.s.GetCheckpoint(e.ctx, r.ID, "cp2")
		must(t, err)
		if cp.Seq != 2 || cp.Parent != "cp1" || cp.StateRef == "" || cp.State != nil || cp.Size != 4096 {
			t.Fatalf("checkpoint 2 = %s", dump(cp))
		}
		pis, err := e.s.ListPlanItems(e.ctx, r.ID)
		must(t, err)
		if len(pis) != 2 || pis[1].Status != run.PlanCompleted || string(pis[1].Result) != `{"ok":true}` {
			t.Fatalf("plan item p2 not replaced: %s", dump(pis))
		}
	})
	t.Run("PointAtOlderCheckpoint", func(t *testing.T) {
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{CheckpointID: "cp1"}})
		must(t, err)
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		if got.CheckpointID != "cp1" {
			t.Fatalf("checkpoint id = %q", got.CheckpointID)
		}
		before := e.snap(e.s, r.ID)
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{CheckpointID: "cp_missing"}})
		wantErr(t, err, store.ErrNotFound)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
	t.Run("ReleaseInCommit", func(t *testing.T) {
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			Run: &store.RunPatch{Status: run.StatusCompleted, Output: str("final"), ReleaseLease: true}})
		must(t, err)
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		if got.Status != run.StatusCompleted || got.Output != "final" || got.Lease.Owner != "" || got.Lease.Token != tok {
			t.Fatalf("after final commit: %s", dump(got))
		}
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Events: []run.Event{ev(run.EventTurnCompleted, "")}})
		wantErr(t, err, store.ErrFenced)
	})
}

// richRun returns a leased run holding some of every record, so that a
// refused write has something to disturb.
func (e *env) richRun() (run.Run, int64) {
	e.t.Helper()
	r, tok := e.leased()
	_, err := e.s.EnqueueInput(e.ctx, r.ID, "also check the appendix")
	must(e.t, err)
	_, err = e.s.Commit(e.ctx, store.Commit{
		RunID: r.ID, Token: tok,
		Run:        &store.RunPatch{Status: run.StatusRunning, StepsDelta: 1},
		Events:     []run.Event{ev(run.EventTurnStarted, `{"n":1}`)},
		Checkpoint: &run.Checkpoint{ID: "cp1", Step: 1, State: []byte("state-1")},
		PlanItems:  []run.PlanItem{planItem("p1", 1, `{"a":1}`, run.ModeMutating)},
		NewOperations: []run.Operation{
			{ID: "op1", PlanItemID: "p1", Tool: "publish", Destination: "blog", Args: json.RawMessage(`{"a":1}`)},
			{ID: "op2", PlanItemID: "p1", Tool: "publish", Destination: "blog", Args: json.RawMessage(`{"a":2}`)},
		},
		NewApprovals: []run.Approval{{ID: "ap1", PlanItemID: "p1", Tool: "publish", Mode: run.ModeMutating, Args: json.RawMessage(`{"a":1}`)}},
	})
	must(e.t, err)
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
		OperationUpdates: []store.OperationUpdate{{ID: "op2", Status: run.OpSucceeded, ExternalID: "post-2", AttemptsDelta: 1}}})
	must(e.t, err)
	e.clock.Advance(time.Second)
	return r, tok
}

func testCommitAllOrNothing(t *testing.T, e *env) {
	r, tok := e.richRun()
	inputs, err := e.s.ListInputs(e.ctx, r.ID, true)
	must(t, err)
	// Every case is a full step (run patch, events, checkpoint, plan items,
	// input consumed) plus one part the store must refuse.
	full := func() store.Commit {
		return store.Commit{
			RunID: r.ID, Token: tok,
			Run:           &store.RunPatch{Status: run.StatusAwaitingApproval, Output: str("x"), StepsDelta: 1},
			Events:        []run.Event{ev(run.EventToolCompleted, ""), ev(run.EventCheckpointWritten, "")},
			Checkpoint:    &run.Checkpoint{ID: "cp2", Parent: "cp1", Step: 2, State: []byte("state-2")},
			PlanItems:     []run.PlanItem{planItem("p1", 1, `{"a":1}`, run.ModeMutating), planItem("p2", 2, `{}`, run.ModeSafeReadonly)},
			ConsumeInputs: []string{inputs[0].ID},
		}
	}
	cases := []struct {
		name string
		mod  func(c *store.Commit)
		want error
	}{
		{"OperationOtherArgs", func(c *store.Commit) {
			c.NewOperations = []run.Operation{{ID: "op1", Args: json.RawMessage(`{"a":99}`)}}
		}, store.ErrConflict},
		{"UpdateOfFinishedOperation", func(c *store.Commit) {
			c.OperationUpdates = []store.OperationUpdate{{ID: "op2", Status: run.OpFailed}}
		}, store.ErrConflict},
		{"UpdateOfUnknownOperation", func(c *store.Commit) {
			c.OperationUpdates = []store.OperationUpdate{{ID: "op_nope", Status: run.OpFailed}}
		}, store.ErrNotFound},
		{"ApprovalOtherArgs", func(c *store.Commit) {
			c.NewApprovals = []run.Approval{{ID: "ap1", Tool: "publish", Mode: run.ModeMutating, Args: json.RawMessage(`{"a":2}`)}}
		}, store.ErrConflict},
		{"CheckpointIDExists", func(c *store.Commit) { c.Checkpoint.ID = "cp1" }, store.ErrConflict},
		{"CheckpointSeqExists", func(c *store.Commit) { c.Checkpoint.Seq = 1 }, store.ErrConflict},
		{"InputConsumedTwice", func(c *store.Commit) {
			c.ConsumeInputs = []string{inputs[0].ID, inputs[0].ID}
		}, store.ErrInvalid},
		{"UnknownInput", func(c *store.Commit) { c.ConsumeInputs = []string{"in_nope"} }, store.ErrNotFound},
		{"CancelUnknownApproval", func(c *store.Commit) { c.CancelApprovals = []string{"ap_nope"} }, store.ErrNotFound},
		{"IllegalTransition", func(c *store.Commit) { c.Run.Status = run.StatusCreated }, run.ErrIllegalTransition},
		{"StaleToken", func(c *store.Commit) { c.Token = tok - 1 }, store.ErrFenced},
		{"FutureToken", func(c *store.Commit) { c.Token = tok + 1 }, store.ErrFenced},
		{"TooManyItems", func(c *store.Commit) {
			for range store.MaxItemsPerCommit {
				c.Events = append(c.Events, ev(run.EventToolProgress, ""))
			}
		}, store.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snap(e.s, r.ID)
			c := full()
			tc.mod(&c)
			seqs, err := e.s.Commit(e.ctx, c)
			wantErr(t, err, tc.want)
			if seqs != nil {
				t.Fatalf("refused commit returned seqs %v", seqs)
			}
			e.sameSnap(before, e.snap(e.s, r.ID))
		})
	}
	t.Run("TheSameStepIsAccepted", func(t *testing.T) {
		// Proves the cases above failed for their one bad part only.
		c := full()
		c.NewOperations = []run.Operation{{ID: "op1", Args: json.RawMessage(`{"a":1}`)}} // same intent: no-op
		seqs, err := e.s.Commit(e.ctx, c)
		must(t, err)
		if len(seqs) != 2 {
			t.Fatalf("seqs = %v", seqs)
		}
		after := e.snap(e.s, r.ID)
		if after.Run.Status != run.StatusAwaitingApproval || len(after.PlanItems) != 2 || len(after.Checkpoints) != 2 ||
			!after.Inputs[0].Consumed || len(after.Operations) != 2 {
			t.Fatalf("full step not applied: %s", dump(after))
		}
	})
}

func testCommitFenced(t *testing.T, e *env) {
	r, tok := e.richRun()
	// Another worker takes over after expiry.
	e.clock.Advance(2 * time.Minute)
	r2, err := e.s.AcquireLease(e.ctx, r.ID, "worker-2", time.Minute)
	must(t, err)
	if r2.Lease.Token != tok+1 {
		t.Fatalf("takeover token %d, want %d", r2.Lease.Token, tok+1)
	}
	before := e.snap(e.s, r.ID)
	_, err = e.s.Commit(e.ctx, store.Commit{
		RunID: r.ID, Token: tok,
		Run:           &store.RunPatch{Status: run.StatusCompleted, Output: str("stale")},
		Events:        []run.Event{ev(run.EventRunCompleted, "")},
		Checkpoint:    &run.Checkpoint{ID: "cp_stale", State: []byte("x")},
		PlanItems:     []run.PlanItem{planItem("p9", 9, `{}`, run.ModeSafeReadonly)},
		NewOperations: []run.Operation{{ID: "op9", Args: json.RawMessage(`{}`)}},
		NewApprovals:  []run.Approval{{ID: "ap9", Tool: "t", Mode: run.ModeMutating, Args: json.RawMessage(`{}`)}},
		OperationUpdates: []store.OperationUpdate{
			{ID: "op1", Status: run.OpSucceeded},
		},
		CancelApprovals: []string{"ap1"},
		Used:            store.Amounts{Tokens: 5},
		Released:        store.Amounts{Tokens: 5},
	})
	wantErr(t, err, store.ErrFenced)
	e.sameSnap(before, e.snap(e.s, r.ID))
	// The new holder writes.
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: r2.Lease.Token, Events: []run.Event{ev(run.EventLeaseAcquired, "")}})
	must(t, err)
}
