package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
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
