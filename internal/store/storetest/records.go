package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
)

func testOperations(t *testing.T, e *env) {
	r, tok := e.leased()
	args := json.RawMessage(`{"title":"Q3","body":"..."}`)
	intent := run.Operation{ID: "op_1", PlanItemID: "p1", Tool: "publish", Destination: "blog", Args: args, ArtifactHash: "abc123"}
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, NewOperations: []run.Operation{intent,
		{ID: "op_2", Tool: "email", ArgsHash: "deadbeef", IdempotencyKey: "mail-key"}},
		Events: []run.Event{{Type: run.EventOpIntent, OperationID: "op_1"}}})
	must(t, err)
	op, err := e.operation(r.ID, "op_1")
	must(t, err)
	wantHash, _ := run.ArgsHash(args)
	if op.Status != run.OpPending || op.ArgsHash != wantHash || op.IdempotencyKey != "op_1" || op.RunID != r.ID ||
		op.Destination != "blog" || op.ArtifactHash != "abc123" || string(op.Args) != string(args) || !op.CreatedAt.Equal(epoch) {
		t.Fatalf("intent stored as %s", dump(op))
	}
	op2, err := e.operation(r.ID, "op_2")
	must(t, err)
	if op2.ArgsHash != "deadbeef" || op2.IdempotencyKey != "mail-key" || op2.Args != nil {
		t.Fatalf("hash-only intent stored as %s", dump(op2))
	}

	t.Run("SameIntentTwice", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, NewOperations: []run.Operation{intent}})
		must(t, err)
		after := e.snap(e.s, r.ID)
		before.Run.UpdatedAt = after.Run.UpdatedAt
		e.sameSnap(before, after)
	})
	t.Run("ListPending", func(t *testing.T) {
		ops, err := e.s.ListOperations(e.ctx, r.ID, true)
		must(t, err)
		if len(ops) != 2 || ops[0].ID != "op_1" || ops[1].ID != "op_2" {
			t.Fatalf("pending = %s", dump(ops))
		}
	})
	t.Run("Complete", func(t *testing.T) {
		e.clock.Advance(time.Second)
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			OperationUpdates: []store.OperationUpdate{{ID: "op_1", Status: run.OpSucceeded, ExternalID: "post-77",
				Result: json.RawMessage(`{"url":"https://blog/77"}`), AttemptsDelta: 2}},
			Events: []run.Event{{Type: run.EventOpSucceeded, OperationID: "op_1"}}})
		must(t, err)
		op, err := e.operation(r.ID, "op_1")
		must(t, err)
		if op.Status != run.OpSucceeded || op.ExternalID != "post-77" || op.Attempts != 2 ||
			string(op.Result) != `{"url":"https://blog/77"}` || !op.UpdatedAt.Equal(e.clock.Now()) || !op.CreatedAt.Equal(epoch) {
			t.Fatalf("completed op = %s", dump(op))
		}
		pending, err := e.s.ListOperations(e.ctx, r.ID, true)
		must(t, err)
		if len(pending) != 1 || pending[0].ID != "op_2" {
			t.Fatalf("pending after completion = %s", dump(pending))
		}
		all, err := e.s.ListOperations(e.ctx, r.ID, false)
		must(t, err)
		if len(all) != 2 || all[0].ID != "op_1" {
			t.Fatalf("all = %s", dump(all))
		}
	})
	t.Run("CompleteTwice", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			OperationUpdates: []store.OperationUpdate{{ID: "op_1", Status: run.OpFailed, Error: "late"}}})
		wantErr(t, err, store.ErrConflict)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
	t.Run("NeedsHuman", func(t *testing.T) {
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			OperationUpdates: []store.OperationUpdate{{ID: "op_2", Status: run.OpNeedsHuman, Error: "destination silent"}}})
		must(t, err)
		pending, err := e.s.ListOperations(e.ctx, r.ID, true)
		must(t, err)
		if len(pending) != 0 {
			t.Fatalf("pending = %s", dump(pending))
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		_, err := e.operation(r.ID, "op_nope")
		wantErr(t, err, store.ErrNotFound)
		_, err = e.s.ListOperations(e.ctx, "run_nope", false)
		wantErr(t, err, store.ErrNotFound)
	})
}

func testApprovals(t *testing.T, e *env) {
	r, tok := e.leased()
	mutArgs := json.RawMessage(`{"to":"all@corp","subject":"Q3"}`)
	onceArgs := json.RawMessage(`{"query":"revenue"}`)
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
		Run: &store.RunPatch{Status: run.StatusRunning},
		NewApprovals: []run.Approval{
			{ID: "ap_mut", PlanItemID: "p1", Tool: "send_mail", Mode: run.ModeMutating, Args: mutArgs},
			{ID: "ap_once", PlanItemID: "p2", Tool: "crm_search", Mode: run.ModeConfirmOnce, Args: onceArgs},
			{ID: "ap_deny", PlanItemID: "p3", Tool: "delete_all", Mode: run.ModeMutating, Args: json.RawMessage(`{}`)},
		},
		Events: []run.Event{ev(run.EventApprovalRequested, "")}})
	must(t, err)
	mutHash, _ := run.ArgsHash(mutArgs)
	a, err := e.s.GetApproval(e.ctx, r.ID, "ap_mut")
	must(t, err)
	if a.Status != run.ApprovalPending || a.ArgsHash != mutHash || a.SessionID != r.SessionID || a.RunID != r.ID ||
		string(a.Args) != string(mutArgs) || a.Mode != run.ModeMutating || !a.CreatedAt.Equal(epoch) {
		t.Fatalf("approval stored as %s", dump(a))
	}
	list, err := e.s.ListApprovals(e.ctx, r.ID)
	must(t, err)
	if len(list) != 3 || list[0].ID != "ap_mut" || list[2].ID != "ap_deny" {
		t.Fatalf("approvals = %s", dump(list))
	}

	t.Run("TaskToken", func(t *testing.T) {
		a, err := e.s.AttachTaskToken(e.ctx, r.ID, "ap_mut", "tok-abc")
		must(t, err)
		if a.TaskToken != "tok-abc" || a.Status != run.ApprovalPending {
			t.Fatalf("after attach: %s", dump(a))
		}
		_, err = e.s.AttachTaskToken(e.ctx, r.ID, "ap_nope", "tok")
		wantErr(t, err, store.ErrNotFound)
	})
	t.Run("WrongHash", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		otherHash, _ := run.ArgsHash([]byte(`{"to":"ceo@corp","subject":"Q3"}`))
		_, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_mut", Approve: true, ArgsHash: otherHash, DecidedBy: "carol"})
		wantErr(t, err, store.ErrHashMismatch)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
	t.Run("Approve", func(t *testing.T) {
		e.clock.Advance(time.Hour)
		a, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_mut", Approve: true, ArgsHash: mutHash, DecidedBy: "carol", Reason: "looks right"})
		must(t, err)
		if a.Status != run.ApprovalApproved || a.DecidedBy != "carol" || a.Reason != "looks right" || a.TaskToken != "tok-abc" || !a.DecidedAt.Equal(e.clock.Now()) {
			t.Fatalf("decided approval = %s", dump(a))
		}
		evs := e.checkGapless(e.s, r.ID)
		last := evs[len(evs)-1]
		if last.Type != run.EventApprovalGranted || last.PlanItemID != "p1" {
			t.Fatalf("last event = %s, want approval_granted for p1", dump(last))
		}
		// A mutating approval never grants the session anything.
		has, err := e.s.HasGrant(e.ctx, r.SessionID, "send_mail")
		must(t, err)
		if has {
			t.Fatal("mutating approval created a grant")
		}
	})
	t.Run("LegacyHashStillDecides", func(t *testing.T) {
		// An approval stored by a Keel whose hashes had no version prefix.
		args := json.RawMessage(`{"amount":12.50,"to":"acct-1"}`)
		legacy, err := run.LegacyArgsHash(args)
		must(t, err)
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			NewApprovals: []run.Approval{{ID: "ap_legacy", PlanItemID: "p9", Tool: "pay", Mode: run.ModeMutating, Args: args, ArgsHash: legacy}},
			Events:       []run.Event{ev(run.EventApprovalRequested, "")}})
		must(t, err)
		a, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_legacy", Approve: true, ArgsHash: legacy, DecidedBy: "carol"})
		must(t, err)
		if a.Status != run.ApprovalApproved || a.ArgsHash != legacy {
			t.Fatalf("legacy approval decided as %s", dump(a))
		}
	})
	t.Run("DecideTwice", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		_, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_mut", Approve: false, ArgsHash: mutHash, DecidedBy: "dave"})
		wantErr(t, err, store.ErrConflict)
		e.sameSnap(before, e.snap(e.s, r.ID))
		// The token can still be read from a decided approval.
		a, err := e.s.AttachTaskToken(e.ctx, r.ID, "ap_mut", "tok-abc")
		must(t, err)
		if a.Status != run.ApprovalApproved {
			t.Fatalf("status %s", a.Status)
		}
	})
	t.Run("ConfirmOnceGrants", func(t *testing.T) {
		has, err := e.s.HasGrant(e.ctx, r.SessionID, "crm_search")
		must(t, err)
		if has {
			t.Fatal("grant before decision")
		}
		onceHash, _ := run.ArgsHash(onceArgs)
		_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_once", Approve: true, ArgsHash: onceHash, DecidedBy: "carol"})
		must(t, err)
		has, err = e.s.HasGrant(e.ctx, r.SessionID, "crm_search")
		must(t, err)
		if !has {
			t.Fatal("approved confirm_once created no grant")
		}
		for _, q := range [][2]string{{"sess-other", "crm_search"}, {r.SessionID, "send_mail"}} {
			has, err := e.s.HasGrant(e.ctx, q[0], q[1])
			must(t, err)
			if has {
				t.Fatalf("grant leaked to %v", q)
			}
		}
	})
	t.Run("Deny", func(t *testing.T) {
		h, _ := run.ArgsHash([]byte(`{}`))
		a, err := e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_deny", Approve: false, ArgsHash: h, DecidedBy: "carol", Reason: "no"})
		must(t, err)
		if a.Status != run.ApprovalDenied {
			t.Fatalf("status %s", a.Status)
		}
		evs := e.checkGapless(e.s, r.ID)
		if evs[len(evs)-1].Type != run.EventApprovalDenied {
			t.Fatalf("last event %s", evs[len(evs)-1].Type)
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		_, err := e.s.GetApproval(e.ctx, r.ID, "ap_nope")
		wantErr(t, err, store.ErrNotFound)
		_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap_nope", Approve: true, ArgsHash: mutHash, DecidedBy: "c"})
		wantErr(t, err, store.ErrNotFound)
	})
}

func testBudget(t *testing.T, e *env) {
	r := e.create(func(r *run.Run) {
		r.Limits = run.Limits{MaxTokens: 1000, MaxSpendMicroUSD: 500, MaxToolCalls: 3}
	})
	b, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 600, SpendMicroUSD: 100, ToolCalls: 1})
	must(t, err)
	if b != (run.Budget{TokensReserved: 600, SpendReservedMicroUSD: 100, ToolCallsReserved: 1}) {
		t.Fatalf("after reserve: %+v", b)
	}
	over := []struct {
		name string
		a    store.Amounts
	}{
		{"Tokens", store.Amounts{Tokens: 401}},
		{"Spend", store.Amounts{SpendMicroUSD: 401}},
		{"ToolCalls", store.Amounts{ToolCalls: 3}},
		{"OneOfThree", store.Amounts{Tokens: 1, SpendMicroUSD: 1, ToolCalls: 3}},
	}
	for _, tc := range over {
		t.Run("Exceeds"+tc.name, func(t *testing.T) {
			before := e.snap(e.s, r.ID)
			_, err := e.s.Reserve(e.ctx, r.ID, tc.a)
			wantErr(t, err, store.ErrBudgetExceeded)
			e.sameSnap(before, e.snap(e.s, r.ID))
		})
	}
	t.Run("ExactlyToTheLimit", func(t *testing.T) {
		b, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 400, SpendMicroUSD: 400, ToolCalls: 2})
		must(t, err)
		if b.TokensReserved != 1000 || b.SpendReservedMicroUSD != 500 || b.ToolCallsReserved != 3 {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("Settle", func(t *testing.T) {
		b, err := e.settle(r.ID, store.Amounts{Tokens: 600, SpendMicroUSD: 100, ToolCalls: 1},
			store.Amounts{Tokens: 550, SpendMicroUSD: 100, ToolCalls: 1})
		must(t, err)
		want := run.Budget{TokensUsed: 550, TokensReserved: 400, SpendUsedMicroUSD: 100, SpendReservedMicroUSD: 400,
			ToolCallsUsed: 1, ToolCallsReserved: 2}
		if b != want {
			t.Fatalf("after settle %+v, want %+v", b, want)
		}
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		if got.Budget != want {
			t.Fatalf("stored budget %+v", got.Budget)
		}
		// What is used counts against the limit like what is reserved.
		_, err = e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 51})
		wantErr(t, err, store.ErrBudgetExceeded)
		_, err = e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 50})
		must(t, err)
	})
	t.Run("UsageOverLimitIsRecorded", func(t *testing.T) {
		r := e.create(func(r *run.Run) { r.Limits = run.Limits{MaxTokens: 100} })
		_, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 100})
		must(t, err)
		// The model used more than was reserved: a fact, stored as is.
		b, err := e.settle(r.ID, store.Amounts{Tokens: 100}, store.Amounts{Tokens: 130})
		must(t, err)
		if b.TokensUsed != 130 || b.TokensReserved != 0 {
			t.Fatalf("%+v", b)
		}
		_, err = e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 1})
		wantErr(t, err, store.ErrBudgetExceeded)
	})
	t.Run("SettledInCommit", func(t *testing.T) {
		r, tok := e.leased(func(r *run.Run) { r.Limits = run.Limits{MaxTokens: 1000, MaxSpendMicroUSD: 100} })
		_, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 300, SpendMicroUSD: 60, ToolCalls: 1})
		must(t, err)
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			Events:   []run.Event{ev(run.EventModelCallCompleted, "")},
			Released: store.Amounts{Tokens: 300, SpendMicroUSD: 60, ToolCalls: 1},
			Used:     store.Amounts{Tokens: 250, SpendMicroUSD: 70, ToolCalls: 1}})
		must(t, err)
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		want := run.Budget{TokensUsed: 250, SpendUsedMicroUSD: 70, ToolCallsUsed: 1}
		if got.Budget != want {
			t.Fatalf("budget after commit %+v, want %+v", got.Budget, want)
		}
		_, err = e.s.Reserve(e.ctx, r.ID, store.Amounts{SpendMicroUSD: 31})
		wantErr(t, err, store.ErrBudgetExceeded)
	})
	t.Run("NoLimit", func(t *testing.T) {
		r := e.create(func(r *run.Run) { r.Limits = run.Limits{} })
		b, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 1 << 40, SpendMicroUSD: 1 << 40, ToolCalls: 1 << 20})
		must(t, err)
		if b.TokensReserved != 1<<40 {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		_, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: -1})
		wantErr(t, err, store.ErrInvalid)
		_, err = e.settle(r.ID, store.Amounts{}, store.Amounts{SpendMicroUSD: -5})
		wantErr(t, err, store.ErrInvalid)
		_, err = e.s.Reserve(e.ctx, "run_nope", store.Amounts{Tokens: 1})
		wantErr(t, err, store.ErrNotFound)
		_, err = e.settle("run_nope", store.Amounts{}, store.Amounts{Tokens: 1})
		wantErr(t, err, store.ErrNotFound)
	})
}

func testCancel(t *testing.T, e *env) {
	r, tok := e.leased()
	_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
		Run: &store.RunPatch{Status: run.StatusRunning},
		NewApprovals: []run.Approval{
			{ID: "ap1", PlanItemID: "p1", Tool: "a", Mode: run.ModeMutating, Args: json.RawMessage(`{"n":1}`)},
			{ID: "ap2", PlanItemID: "p2", Tool: "b", Mode: run.ModeMutating, Args: json.RawMessage(`{"n":2}`)},
			{ID: "ap3", PlanItemID: "p3", Tool: "c", Mode: run.ModeMutating, Args: json.RawMessage(`{"n":3}`)},
		}})
	must(t, err)
	_, err = e.s.AttachTaskToken(e.ctx, r.ID, "ap2", "tt-2")
	must(t, err)
	h3, _ := run.ArgsHash([]byte(`{"n":3}`))
	_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap3", Approve: true, ArgsHash: h3, DecidedBy: "x"})
	must(t, err)
	before := e.checkGapless(e.s, r.ID)

	got, cancelled, err := e.s.RequestCancel(e.ctx, r.ID, "carol")
	must(t, err)
	if !got.CancelRequested || got.Status != run.StatusRunning || got.Lease != r.Lease {
		t.Fatalf("run after cancel request: %s", dump(got))
	}
	if len(cancelled) != 2 || cancelled[0].ID != "ap1" || cancelled[1].ID != "ap2" || cancelled[1].TaskToken != "tt-2" ||
		cancelled[0].Status != run.ApprovalCancelled {
		t.Fatalf("cancelled approvals = %s", dump(cancelled))
	}
	stored, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if !stored.CancelRequested {
		t.Fatal("cancel flag not stored")
	}
	for id, want := range map[string]run.ApprovalStatus{"ap1": run.ApprovalCancelled, "ap2": run.ApprovalCancelled, "ap3": run.ApprovalApproved} {
		a, err := e.s.GetApproval(e.ctx, r.ID, id)
		must(t, err)
		if a.Status != want {
			t.Fatalf("approval %s is %s, want %s", id, a.Status, want)
		}
	}
	after := e.checkGapless(e.s, r.ID)
	newTypes := eventTypes(after[len(before):])
	wantTypes := []run.EventType{run.EventCancelRequested, run.EventApprovalCancelled, run.EventApprovalCancelled}
	if !reflect.DeepEqual(newTypes, wantTypes) {
		t.Fatalf("events appended by cancel = %v, want %v", newTypes, wantTypes)
	}
	if !strings.Contains(string(after[len(before)].Data), "carol") {
		t.Fatalf("cancel_requested does not say who: %s", after[len(before)].Data)
	}
	// A cancelled approval can no longer be decided.
	h1, _ := run.ArgsHash([]byte(`{"n":1}`))
	_, err = e.s.DecideApproval(e.ctx, store.Decision{RunID: r.ID, ApprovalID: "ap1", Approve: true, ArgsHash: h1, DecidedBy: "x"})
	wantErr(t, err, store.ErrConflict)
	// The worker still holds its lease and records the cancellation.
	e.finish(r.ID, tok, run.StatusCancelled)
	t.Run("Terminal", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		_, _, err := e.s.RequestCancel(e.ctx, r.ID, "carol")
		wantErr(t, err, store.ErrTerminal)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
	t.Run("Unknown", func(t *testing.T) {
		_, _, err := e.s.RequestCancel(e.ctx, "run_nope", "carol")
		wantErr(t, err, store.ErrNotFound)
	})
}

func testInputs(t *testing.T, e *env) {
	r, tok := e.leased()
	in1, err := e.s.EnqueueInput(e.ctx, r.ID, "first")
	must(t, err)
	e.clock.Advance(time.Second)
	in2, err := e.s.EnqueueInput(e.ctx, r.ID, "second")
	must(t, err)
	if in1.ID == "" || in1.ID == in2.ID || in1.RunID != r.ID || in1.Text != "first" || in1.Consumed || !in2.ReceivedAt.Equal(e.clock.Now()) {
		t.Fatalf("inputs = %s %s", dump(in1), dump(in2))
	}
	evs := e.checkGapless(e.s, r.ID)
	if !reflect.DeepEqual(eventTypes(evs), []run.EventType{run.EventRunCreated, run.EventInputReceived, run.EventInputReceived}) {
		t.Fatalf("events = %v", eventTypes(evs))
	}
	pending, err := e.s.ListInputs(e.ctx, r.ID, true)
	must(t, err)
	if !reflect.DeepEqual(pending, []run.Input{in1, in2}) {
		t.Fatalf("pending = %s, want %s", dump(pending), dump([]run.Input{in1, in2}))
	}
	_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, ConsumeInputs: []string{in1.ID},
		Events: []run.Event{ev(run.EventTurnStarted, "")}})
	must(t, err)
	pending, err = e.s.ListInputs(e.ctx, r.ID, true)
	must(t, err)
	if len(pending) != 1 || pending[0].ID != in2.ID {
		t.Fatalf("pending after consume = %s", dump(pending))
	}
	all, err := e.s.ListInputs(e.ctx, r.ID, false)
	must(t, err)
	if len(all) != 2 || !all[0].Consumed || all[1].Consumed {
		t.Fatalf("all inputs = %s", dump(all))
	}
	t.Run("ConsumeTwice", func(t *testing.T) {
		before := e.snap(e.s, r.ID)
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, ConsumeInputs: []string{in1.ID}})
		wantErr(t, err, store.ErrConflict)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
	t.Run("Terminal", func(t *testing.T) {
		e.finish(r.ID, tok, run.StatusCompleted)
		before := e.snap(e.s, r.ID)
		_, err := e.s.EnqueueInput(e.ctx, r.ID, "too late")
		wantErr(t, err, store.ErrTerminal)
		e.sameSnap(before, e.snap(e.s, r.ID))
	})
}

func testCheckpoints(t *testing.T, e *env) {
	r, tok := e.leased()
	for i := 1; i <= 5; i++ {
		id := "cp" + string(rune('0'+i))
		parent := ""
		if i > 1 {
			parent = "cp" + string(rune('0'+i-1))
		}
		_, err := e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok,
			Run:        &store.RunPatch{StepsDelta: 1},
			Checkpoint: &run.Checkpoint{ID: id, Parent: parent, Step: int64(i), State: []byte(strings.Repeat("s", i))}})
		must(t, err)
	}
	got, err := e.s.GetRun(e.ctx, r.ID)
	must(t, err)
	if got.CheckpointID != "cp5" || got.StepCount != 5 {
		t.Fatalf("run: checkpoint %q steps %d", got.CheckpointID, got.StepCount)
	}
	cases := []struct {
		name  string
		after int64
		limit int
		want  []string
	}{
		{"All", 0, 0, []string{"cp1", "cp2", "cp3", "cp4", "cp5"}},
		{"Page", 1, 2, []string{"cp2", "cp3"}},
		{"Tail", 4, 10, []string{"cp5"}},
		{"PastEnd", 5, 10, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cps, err := e.s.ListCheckpoints(e.ctx, r.ID, tc.after, tc.limit)
			must(t, err)
			var ids []string
			for i, cp := range cps {
				ids = append(ids, cp.ID)
				if i > 0 && cp.Seq != cps[i-1].Seq+1 {
					t.Fatalf("seqs not consecutive: %s", dump(cps))
				}
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Fatalf("ListCheckpoints(%d, %d) = %v, want %v", tc.after, tc.limit, ids, tc.want)
			}
		})
	}
	cp, err := e.s.GetCheckpoint(e.ctx, r.ID, "cp3")
	must(t, err)
	if cp.Seq != 3 || cp.Parent != "cp2" || string(cp.State) != "sss" || cp.Size != 3 {
		t.Fatalf("cp3 = %s", dump(cp))
	}
	_, err = e.s.GetCheckpoint(e.ctx, r.ID, "cp_nope")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.s.GetCheckpoint(e.ctx, "run_nope", "cp1")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.s.ListCheckpoints(e.ctx, "run_nope", 0, 0)
	wantErr(t, err, store.ErrNotFound)
	_, err = e.s.ListPlanItems(e.ctx, "run_nope")
	wantErr(t, err, store.ErrNotFound)
}

// testReopen: everything written survives Close and a new Open, and the
// reopened store continues the same sequences and lease.
func testReopen(t *testing.T, e *env) {
	r, tok := e.richRun()
	_, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{Tokens: 10})
	must(t, err)
	other := e.create(func(r *run.Run) { r.ClientKey = "ck" })
	before := e.snap(e.s, r.ID)
	must(t, e.s.Close())

	s2 := e.openStore()
	e.s = s2
	e.sameSnap(before, e.snap(s2, r.ID))
	again, created, err := s2.CreateRun(e.ctx, e.newRun(func(r *run.Run) { r.ClientKey = "ck" }))
	must(t, err)
	if created || again.ID != other.ID {
		t.Fatal("client key lost on reopen")
	}
	seqs, err := s2.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Events: []run.Event{ev(run.EventTurnCompleted, "")},
		Checkpoint: &run.Checkpoint{ID: "cp_after", State: []byte("z")}})
	must(t, err)
	if seqs[0] != before.Run.LastSeq+1 {
		t.Fatalf("seq after reopen %d, want %d", seqs[0], before.Run.LastSeq+1)
	}
	cp, err := s2.GetCheckpoint(e.ctx, r.ID, "cp_after")
	must(t, err)
	if cp.Seq != 2 {
		t.Fatalf("checkpoint seq after reopen %d, want 2", cp.Seq)
	}
	_, err = s2.AcquireLease(e.ctx, r.ID, "worker-2", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld)
}

func testSignals(t *testing.T, e *env) {
	r, tok := e.leased()
	sig, err := e.s.RunSignals(e.ctx, r.ID)
	must(t, err)
	if sig.CancelRequested || sig.LeaseToken != tok || sig.Status != run.StatusCreated {
		t.Fatalf("signals of a fresh leased run: %+v (token %d)", sig, tok)
	}
	_, _, err = e.s.RequestCancel(e.ctx, r.ID, "carol")
	must(t, err)
	r2, err := e.s.AcquireLease(e.ctx, r.ID, "worker-2", time.Minute)
	if err == nil {
		tok = r2.Lease.Token
	}
	sig, err = e.s.RunSignals(e.ctx, r.ID)
	must(t, err)
	if !sig.CancelRequested || sig.LeaseToken != tok {
		t.Fatalf("signals after cancel: %+v (token %d)", sig, tok)
	}
	_, err = e.s.RunSignals(e.ctx, "run_does_not_exist")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.s.RunSignals(e.ctx, "")
	wantErr(t, err, store.ErrInvalid)
}
