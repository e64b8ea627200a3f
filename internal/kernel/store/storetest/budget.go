// The conformance tests of budget reservations and settlement (split from records.go to keep files short).

package storetest

import (
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

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
	t.Run("RaisedInCommit", func(t *testing.T) {
		r, tok := e.leased(func(r *run.Run) { r.Limits = run.Limits{MaxSpendMicroUSD: 100, MaxToolCalls: 2} })
		_, err := e.s.Reserve(e.ctx, r.ID, store.Amounts{SpendMicroUSD: 100})
		must(t, err)
		_, err = e.s.Reserve(e.ctx, r.ID, store.Amounts{SpendMicroUSD: 1})
		wantErr(t, err, store.ErrBudgetExceeded)
		// A person raised spend by 50; tokens, which have no limit, stay
		// without one.
		_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Events: []run.Event{ev(run.EventModelCallCompleted, "")},
			Run: &store.RunPatch{RaiseLimits: run.Limits{MaxSpendMicroUSD: 50, MaxTokens: 10}}})
		must(t, err)
		got, err := e.s.GetRun(e.ctx, r.ID)
		must(t, err)
		if want := (run.Limits{MaxSpendMicroUSD: 150, MaxToolCalls: 2}); got.Limits != want {
			t.Fatalf("limits after the raise %+v, want %+v", got.Limits, want)
		}
		_, err = e.s.Reserve(e.ctx, r.ID, store.Amounts{SpendMicroUSD: 51})
		wantErr(t, err, store.ErrBudgetExceeded)
		_, err = e.s.Reserve(e.ctx, r.ID, store.Amounts{SpendMicroUSD: 50, Tokens: 1 << 30})
		must(t, err)
		for _, bad := range []run.Limits{{MaxSpendMicroUSD: -1}, {Deadline: time.Unix(1, 0)}} {
			_, err = e.s.Commit(e.ctx, store.Commit{RunID: r.ID, Token: tok, Run: &store.RunPatch{RaiseLimits: bad}})
			wantErr(t, err, store.ErrInvalid)
		}
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
