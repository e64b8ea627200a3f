package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// The conformance suite (storetest) drives these checks through every
// backend; these tests pin what the backends cannot show: that the
// caller's values are left alone and the derived fields are filled in.

func TestValidateCommitFillsCopies(t *testing.T) {
	args := json.RawMessage(`{"b":1,"a":2}`)
	items := []run.PlanItem{{ID: "p1", Tool: "t", Mode: run.ModeMutating, Args: args}}
	ops := []run.Operation{{ID: "op1", Args: args}}
	aps := []run.Approval{{ID: "ap1", Tool: "t", Mode: run.ModeConfirmOnce, Args: args}}
	cp := &run.Checkpoint{ID: "cp1", State: []byte("state")}
	c := store.Commit{RunID: "run_1", Checkpoint: cp, PlanItems: items, NewOperations: ops, NewApprovals: aps}
	if err := store.ValidateCommit(&c); err != nil {
		t.Fatal(err)
	}
	want, err := run.ArgsHash(args)
	if err != nil {
		t.Fatal(err)
	}
	if c.PlanItems[0].ArgsHash != want || c.NewOperations[0].ArgsHash != want || c.NewApprovals[0].ArgsHash != want {
		t.Fatalf("args hashes %q %q %q, want %q", c.PlanItems[0].ArgsHash, c.NewOperations[0].ArgsHash, c.NewApprovals[0].ArgsHash, want)
	}
	if c.PlanItems[0].Status != run.PlanPending {
		t.Fatalf("plan item status %q, want pending", c.PlanItems[0].Status)
	}
	if c.NewOperations[0].IdempotencyKey != "op1" {
		t.Fatalf("idempotency key %q, want the operation id", c.NewOperations[0].IdempotencyKey)
	}
	if c.Checkpoint.RunID != "run_1" || c.Checkpoint.StateHash != run.HashBytes(cp.State) || c.Checkpoint.Size != 5 {
		t.Fatalf("checkpoint %+v: run id, hash or size not filled in", c.Checkpoint)
	}
	if items[0].ArgsHash != "" || items[0].Status != "" || ops[0].ArgsHash != "" || ops[0].IdempotencyKey != "" ||
		aps[0].ArgsHash != "" || cp.RunID != "" || cp.StateHash != "" {
		t.Fatal("ValidateCommit changed the caller's values")
	}
}

func TestValidateCommitErrorLeavesCommit(t *testing.T) {
	items := []run.PlanItem{{ID: "p1", Tool: "t", Mode: run.ModeMutating}}
	cp := &run.Checkpoint{ID: "cp1", State: []byte("s")}
	c := store.Commit{RunID: "run_1", Checkpoint: cp, PlanItems: items,
		NewOperations: []run.Operation{{ID: "op1"}}} // no args, no hash
	err := store.ValidateCommit(&c)
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if c.Checkpoint != cp || &c.PlanItems[0] != &items[0] {
		t.Fatal("a refused commit was changed")
	}
}

func TestValidateLimits(t *testing.T) {
	cases := []struct {
		name    string
		call    func() (int, error)
		want    int
		mention string // empty: no error expected
	}{
		{"RunsDefault", func() (int, error) { return store.ValidateRunsQuery(store.ListRunsQuery{}) }, 100, ""},
		{"RunsCapped", func() (int, error) { return store.ValidateRunsQuery(store.ListRunsQuery{Limit: 1 << 20}) }, store.MaxRunsPerPage, ""},
		{"RunsAsGiven", func() (int, error) { return store.ValidateRunsQuery(store.ListRunsQuery{Limit: 7}) }, 7, ""},
		{"RunsNegative", func() (int, error) { return store.ValidateRunsQuery(store.ListRunsQuery{Limit: -1}) }, 0, "limit"},
		{"RunsUnknownStatus", func() (int, error) { return store.ValidateRunsQuery(store.ListRunsQuery{Status: "asleep"}) }, 0, "status"},
		{"PageDefault", func() (int, error) { return store.ValidatePage("run_1", 0, 0) }, store.MaxEventsPerPage, ""},
		{"PageCapped", func() (int, error) { return store.ValidatePage("run_1", 3, 1<<20) }, store.MaxEventsPerPage, ""},
		{"PageAsGiven", func() (int, error) { return store.ValidatePage("run_1", 3, 9) }, 9, ""},
		{"PageNegativeSeq", func() (int, error) { return store.ValidatePage("run_1", -1, 9) }, 0, "seq"},
		{"PageEmptyRun", func() (int, error) { return store.ValidatePage("", 0, 9) }, 0, "run id"},
		{"PageLongRun", func() (int, error) { return store.ValidatePage(strings.Repeat("r", store.MaxID+1), 0, 9) }, 0, "run id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.call()
			if tc.mention == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %d, %v; want %d, nil", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.mention)
			}
		})
	}
}
