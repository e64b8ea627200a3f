package keel

import (
	"testing"

	"github.com/keelrun/keel/internal/kernel/ops"
)

// TestPromiseSpellings holds the one mapping between a destination's
// promise as the API spells it (Promise), as the operation protocol
// reads it (ops.Contract) and as events and tools print it
// (Promise.String and ops.Contract.String), the table of ops.Contract's
// doc comment.
func TestPromiseSpellings(t *testing.T) {
	cases := []struct {
		promise  Promise
		contract ops.Contract
		wire     string
	}{
		{PromisesNothing, ops.Contract{}, "none"},
		{IdempotentByKey, ops.Contract{Idempotent: true}, "idempotency_key"},
		{LookupByKey, ops.Contract{Lookup: true}, "lookup"},
		{IdempotentByKey | LookupByKey, ops.Contract{Idempotent: true, Lookup: true}, "idempotency_key+lookup"},
	}
	for _, c := range cases {
		t.Run(c.wire, func(t *testing.T) {
			if got := c.promise.contract(); got != c.contract {
				t.Errorf("Promise(%d).contract() = %+v, want %+v", c.promise, got, c.contract)
			}
			if got := c.promise.String(); got != c.wire {
				t.Errorf("Promise(%d).String() = %q, want %q", c.promise, got, c.wire)
			}
			if got := c.contract.String(); got != c.wire {
				t.Errorf("%+v.String() = %q, want %q", c.contract, got, c.wire)
			}
		})
	}
}
