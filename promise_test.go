package keel

import "testing"

// The three spellings of a destination's promise — the Promise constants,
// the recorded ops.Contract and its name in records and output — map one
// to one.
func TestPromiseSpellings(t *testing.T) {
	for _, tc := range []struct {
		p                  Promise
		name               string
		idempotent, lookup bool
	}{
		{PromisesNothing, "none", false, false},
		{IdempotentByKey, "idempotency_key", true, false},
		{LookupByKey, "lookup", false, true},
		{IdempotentByKey | LookupByKey, "idempotency_key+lookup", true, true},
	} {
		c := tc.p.contract()
		if tc.p.String() != tc.name || c.String() != tc.name || c.Idempotent != tc.idempotent || c.Lookup != tc.lookup {
			t.Errorf("Promise %d: %q, contract %+v %q; want %q", tc.p, tc.p.String(), c, c.String(), tc.name)
		}
	}
}
