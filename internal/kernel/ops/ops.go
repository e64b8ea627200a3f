// Package ops is the operation protocol for side effects whose outcome may be
// uncertain: the intent is recorded before dispatch, the operation id is the
// idempotency key, the outcome is recorded before the run moves on, and a
// pending operation is reconciled first after a crash.
//
// A destination declares what it can promise: Idempotent (a retry with the
// same idempotency key is safe), Lookup (it can be asked whether operation X
// or artifact H exists), or neither. The harness records an operation's
// intent as pending before dispatch, dispatches with the operation id as the
// idempotency key, records the outcome before moving on, and on recovery
// calls [Reconcile] for every pending operation before doing anything else.
//
// A timeout, a lost response or a crash is never read as "nothing happened":
// Reconcile asks the destination when it can, retries with the same id and
// unchanged arguments only where the destination promises idempotency, and
// otherwise answers NeedsHuman.
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Contract is what a destination promises. It is one concept with three
// spellings, converted in one place each and held together by
// TestPromiseSpellings (package keel):
//
//	keel.Promise (public API)     Contract                           String() (events, CLI, viewer)
//	PromisesNothing               {}                                 none
//	IdempotentByKey               {Idempotent: true}                 idempotency_key
//	LookupByKey                   {Lookup: true}                     lookup
//	IdempotentByKey|LookupByKey   {Idempotent: true, Lookup: true}   idempotency_key+lookup
//
// keel.Promise converts to Contract in keel's Promise.contract (and, for
// Keel's own test fixture, which cannot reach that unexported method, in
// fixturetest.Contract); the wire string is only made by String.
type Contract struct {
	// Idempotent: a dispatch repeated with the same idempotency key has
	// the effect of one.
	Idempotent bool `json:"idempotent"`
	// Lookup: the destination can say whether an operation id exists.
	Lookup bool `json:"lookup"`
}

// String names the contract as the docs do: idempotency_key, lookup, both, none.
func (c Contract) String() string {
	switch {
	case c.Idempotent && c.Lookup:
		return "idempotency_key+lookup"
	case c.Idempotent:
		return "idempotency_key"
	case c.Lookup:
		return "lookup"
	}
	return "none"
}

// Outcome is what a destination confirmed.
type Outcome struct {
	ExternalID string          `json:"external_id"`
	Result     json.RawMessage `json:"result,omitempty"`
}

// Destination is an external system a tool changes.
type Destination interface {
	// Name identifies the destination in operation records.
	Name() string
	Contract() Contract
	// Dispatch performs the effect described by op, sending op.IdempotencyKey
	// where the destination takes one. An error means the outcome is
	// unknown unless it is a *Rejected.
	Dispatch(ctx context.Context, op run.Operation) (Outcome, error)
	// Lookup reports whether op took effect. Only called when
	// Contract().Lookup is true.
	Lookup(ctx context.Context, op run.Operation) (Outcome, bool, error)
}

// Rejected is a definite refusal by the destination: the effect did not
// happen and retrying will not change that (a 4xx, a validation error).
type Rejected struct{ Reason string }

func (e *Rejected) Error() string { return "destination rejected the operation: " + e.Reason }

// Verdict is the result of reconciling one pending operation.
type Verdict int

// Verdicts.
const (
	// Found: the destination has the effect; record Outcome, do not dispatch.
	Found Verdict = iota
	// Redispatched: the effect was (re)sent with the same key and confirmed.
	Redispatched
	// Failed: the destination definitely refused it.
	Failed
	// NeedsHuman: nobody can tell whether the effect happened.
	NeedsHuman
)

func (v Verdict) String() string {
	return [...]string{"found", "redispatched", "failed", "needs_human"}[v]
}

// ErrUncertain wraps errors that leave an operation's outcome unknown.
var ErrUncertain = errors.New("operation outcome uncertain")

// Reconcile decides what became of a pending operation after a crash or a
// lost response. It never dispatches without the same idempotency key and
// unchanged arguments, and only where the destination is idempotent or its
// lookup says the effect is absent. An error (a lookup that failed) means
// "ask again later": the operation stays pending.
func Reconcile(ctx context.Context, d Destination, op run.Operation) (Verdict, Outcome, error) {
	if op.Status != run.OpPending {
		return 0, Outcome{}, fmt.Errorf("reconcile %s: status is %s, not pending", op.ID, op.Status)
	}
	if op.IdempotencyKey != op.ID {
		return NeedsHuman, Outcome{}, nil
	}
	if err := run.VerifyArgsHash(op.Args, op.ArgsHash); err != nil {
		// The arguments we hold are not the ones recorded at intent time:
		// sending them could be a different action.
		return NeedsHuman, Outcome{}, nil
	}
	c := d.Contract()
	if c.Lookup {
		out, found, err := d.Lookup(ctx, op)
		if err != nil {
			return 0, Outcome{}, fmt.Errorf("%w: lookup of %s at %s: %w", ErrUncertain, op.ID, d.Name(), err)
		}
		if found {
			return Found, out, nil
		}
		// Absent at an authoritative lookup: sending it now, with the same
		// key, is the first effect (or a no-op where it is also idempotent).
		return dispatchAgain(ctx, d, op)
	}
	if c.Idempotent {
		return dispatchAgain(ctx, d, op)
	}
	return NeedsHuman, Outcome{}, nil
}

func dispatchAgain(ctx context.Context, d Destination, op run.Operation) (Verdict, Outcome, error) {
	out, err := d.Dispatch(ctx, op)
	if err == nil {
		return Redispatched, out, nil
	}
	var rej *Rejected
	if errors.As(err, &rej) {
		return Failed, Outcome{}, err
	}
	if d.Contract().Idempotent || d.Contract().Lookup {
		// Still safe to try again later with the same key.
		return 0, Outcome{}, fmt.Errorf("%w: redispatch of %s at %s: %w", ErrUncertain, op.ID, d.Name(), err)
	}
	return NeedsHuman, Outcome{}, nil
}
