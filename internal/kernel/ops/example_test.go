package ops_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
)

// ledger is a destination that keeps payments by idempotency key and can
// be asked about one: both promises of the protocol.
type ledger struct {
	mu       sync.Mutex
	payments map[string]string
}

func (l *ledger) Name() string { return "ledger" }
func (l *ledger) Contract() ops.Contract {
	return ops.Contract{Idempotent: true, Lookup: true}
}

func (l *ledger) Dispatch(_ context.Context, op run.Operation) (ops.Outcome, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id, ok := l.payments[op.IdempotencyKey]; ok {
		return ops.Outcome{ExternalID: id}, nil // a repeat is a no-op
	}
	id := fmt.Sprintf("pay-%d", len(l.payments)+1)
	l.payments[op.IdempotencyKey] = id
	return ops.Outcome{ExternalID: id}, nil
}

func (l *ledger) Lookup(_ context.Context, op run.Operation) (ops.Outcome, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.payments[op.IdempotencyKey]
	return ops.Outcome{ExternalID: id}, ok, nil
}

// Define a destination, then recover a pending operation whose response was
// lost: the lookup finds the effect and nothing is sent twice.
func Example_destination() {
	l := &ledger{payments: map[string]string{}}
	args := []byte(`{"amount":10,"to":"acme"}`)
	hash, _ := run.ArgsHash(args)
	op := run.Operation{ID: "op_1", IdempotencyKey: "op_1", Args: args, ArgsHash: hash, Status: run.OpPending}

	_, _ = l.Dispatch(context.Background(), op) // the worker crashes before recording this

	verdict, out, err := ops.Reconcile(context.Background(), l, op)
	fmt.Println(verdict, out.ExternalID, err, len(l.payments))
	// Output: found pay-1 <nil> 1
}
