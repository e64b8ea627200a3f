package ops_test

import (
	"context"
	"errors"
	"testing"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
)

// recorder is a destination with a configurable contract that records
// every dispatch: the effects it holds are the truth the test checks.
type recorder struct {
	contract  ops.Contract
	effects   map[string]int
	lookupErr error
	sendErr   error
}

func (r *recorder) Name() string           { return "recorder" }
func (r *recorder) Contract() ops.Contract { return r.contract }
func (r *recorder) Dispatch(_ context.Context, op run.Operation) (ops.Outcome, error) {
	if r.sendErr != nil {
		return ops.Outcome{}, r.sendErr
	}
	if r.contract.Idempotent && r.effects[op.IdempotencyKey] > 0 {
		return ops.Outcome{ExternalID: op.IdempotencyKey}, nil
	}
	r.effects[op.IdempotencyKey]++
	return ops.Outcome{ExternalID: op.IdempotencyKey}, nil
}
func (r *recorder) Lookup(_ context.Context, op run.Operation) (ops.Outcome, bool, error) {
	if r.lookupErr != nil {
		return ops.Outcome{}, false, r.lookupErr
	}
	return ops.Outcome{ExternalID: op.IdempotencyKey}, r.effects[op.IdempotencyKey] > 0, nil
}

func pendingOp(t *testing.T) run.Operation {
	args := []byte(`{"b":2,"a":1}`)
	h, err := run.ArgsHash(args)
	if err != nil {
		t.Fatal(err)
	}
	return run.Operation{ID: "op_x", IdempotencyKey: "op_x", Args: args, ArgsHash: h, Status: run.OpPending}
}

func TestReconcile(t *testing.T) {
	cases := []struct {
		name        string
		contract    ops.Contract
		happened    bool
		lookupErr   error
		sendErr     error
		mutate      func(*run.Operation)
		want        ops.Verdict
		wantErr     bool
		wantEffects int
	}{
		{"lookup finds it", ops.Contract{Lookup: true}, true, nil, nil, nil, ops.Found, false, 1},
		{"lookup says absent: sent once", ops.Contract{Lookup: true}, false, nil, nil, nil, ops.Redispatched, false, 1},
		{"idempotent retry after it happened", ops.Contract{Idempotent: true}, true, nil, nil, nil, ops.Redispatched, false, 1},
		{"idempotent retry when it did not", ops.Contract{Idempotent: true}, false, nil, nil, nil, ops.Redispatched, false, 1},
		{"none: needs a human, nothing sent", ops.Contract{}, true, nil, nil, nil, ops.NeedsHuman, false, 1},
		{"none and it did not happen: still a human", ops.Contract{}, false, nil, nil, nil, ops.NeedsHuman, false, 0},
		{"lookup fails: ask again later", ops.Contract{Lookup: true, Idempotent: true}, true, errors.New("timeout"), nil, nil, 0, true, 1},
		{"definite rejection", ops.Contract{Idempotent: true}, false, nil, &ops.Rejected{Reason: "400"}, nil, ops.Failed, true, 0},
		{"args changed since intent", ops.Contract{Idempotent: true}, false, nil, nil,
			func(op *run.Operation) { op.Args = []byte(`{"a":1,"b":3}`) }, ops.NeedsHuman, false, 0},
		{"intent stored with a legacy (unprefixed) hash still reconciles", ops.Contract{Lookup: true}, true, nil, nil,
			func(op *run.Operation) { op.ArgsHash, _ = run.LegacyArgsHash(op.Args) }, ops.Found, false, 1},
		{"key is not the operation id", ops.Contract{Idempotent: true}, false, nil, nil,
			func(op *run.Operation) { op.IdempotencyKey = "model-call-7" }, ops.NeedsHuman, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := pendingOp(t)
			d := &recorder{contract: tc.contract, effects: map[string]int{}, lookupErr: tc.lookupErr, sendErr: tc.sendErr}
			if tc.happened {
				d.effects[op.IdempotencyKey] = 1
			}
			if tc.mutate != nil {
				tc.mutate(&op)
			}
			v, _, err := ops.Reconcile(context.Background(), d, op)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil || v == ops.Failed {
				if v != tc.want {
					t.Fatalf("verdict %s, want %s", v, tc.want)
				}
			}
			if got := d.effects[op.IdempotencyKey]; got != tc.wantEffects {
				t.Fatalf("effects = %d, want %d", got, tc.wantEffects)
			}
		})
	}
}

func TestReconcileRefusesNonPending(t *testing.T) {
	op := pendingOp(t)
	op.Status = run.OpSucceeded
	if _, _, err := ops.Reconcile(context.Background(), &recorder{effects: map[string]int{}}, op); err == nil {
		t.Fatal("reconciled a finished operation")
	}
}
