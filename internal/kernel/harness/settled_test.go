package harness_test

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestSettledRunTellsTheTruth: a run ends needs_human over an operation no
// one can check (issue #34's case); no Step moves it; a person settles it,
// and the next Step answers the model with what the person established —
// not the uncertainty message — before the run goes on.
func TestSettledRunTellsTheTruth(t *testing.T) {
	cases := []struct {
		outcome  store.SettleOutcome
		ext      string
		item     run.PlanStatus
		op       run.OpStatus
		told     string
		status   run.Status
		settleBy string
	}{
		{store.SettleHappened, "post-7", run.PlanCompleted, run.OpSucceeded, "a person confirmed this outcome", run.StatusCompleted, "alice"},
		{store.SettleNotHappened, "", run.PlanCompleted, run.OpSucceeded, "", run.StatusCompleted, "alice"},
		{store.SettleGiveUp, "", run.PlanNeedsHuman, run.OpNeedsHuman, "", run.StatusFailed, "alice"},
	}
	for _, tc := range cases {
		t.Run(string(tc.outcome), func(t *testing.T) {
			e := newEnv(t)
			eff := &panicky{dispatchPanics: 1, applied: map[string]bool{}} // promises nothing: the panic leaves it unknown
			script := `{"turns":[{"tool_calls":[{"name":"pub","args":{}}]}],"final":"done"}`
			h := e.Harness(nil, e.Agent("a", script, eff), nil)
			r := e.CreateRun("a", "s1", nil)
			e.StepUntil(h, r.ID)
			e.Decide(r.ID, e.PendingApproval(r.ID), true)
			e.StepUntil(h, r.ID)
			if got := e.GetRun(r.ID); got.Status != run.StatusNeedsHuman {
				t.Fatalf("run %s, want needs_human", got.Status)
			}
			seen := len(e.Events(r.ID))
			if d, err := h.Step(e.Ctx, r.ID, 0); err != nil || d.Next != "needs_human" || len(e.Events(r.ID)) != seen {
				t.Fatalf("a Step on needs_human: %+v %v, wrote %d events", d, err, len(e.Events(r.ID))-seen)
			}
			ops, err := e.Store.ListOperations(e.Ctx, r.ID, false)
			if err != nil || len(ops) != 1 {
				t.Fatalf("operations %+v %v", ops, err)
			}
			if _, err := e.Store.SettleOperation(e.Ctx, store.Settlement{RunID: r.ID, OperationID: ops[0].ID, Outcome: tc.outcome,
				ExternalID: tc.ext, By: tc.settleBy, Reason: "looked at the destination"}); err != nil {
				t.Fatal(err)
			}
			e.StepUntil(h, r.ID)
			got := e.GetRun(r.ID)
			if got.Status != tc.status {
				t.Fatalf("run %s (%q) after the settle, want %s", got.Status, got.Error, tc.status)
			}
			items, err := e.Store.ListPlanItems(e.Ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.ID != ops[0].PlanItemID {
					continue
				}
				if it.Status != tc.item || !strings.Contains(string(it.Result), tc.told) {
					t.Fatalf("plan item %s %s, want %s telling %q", it.Status, it.Result, tc.item, tc.told)
				}
			}
			if len(eff.applied) > 1 {
				t.Fatalf("the destination applied %d operations", len(eff.applied))
			}
			// Dispatched once more, with the same key, only when a
			// person established the first did not happen.
			dispatches, attempts := int64(1), int64(1)
			if tc.outcome == store.SettleNotHappened {
				dispatches, attempts = 2, 2
			}
			if got := eff.dispatches.Load(); got != dispatches || !eff.applied[ops[0].ID] {
				t.Fatalf("%d dispatches (keys %v), want %d with key %s", got, eff.applied, dispatches, ops[0].ID)
			}
			after, err := e.Store.ListOperations(e.Ctx, r.ID, false)
			if err != nil || len(after) != 1 || after[0].Status != tc.op || after[0].Attempts != attempts {
				t.Fatalf("operations after the settle %+v %v: want one, %s, %d attempts", after, err, tc.op, attempts)
			}
		})
	}
}
