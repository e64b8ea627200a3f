package keel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/kernel/ops"
)

// Promise is what a destination promises about repeated or lost requests;
// it decides what Keel may do when a dispatch's outcome is unknown (a
// timeout, a crash between sending and recording). Combine with |.
type Promise uint8

const (
	// PromisesNothing: a repeated request may act twice and the
	// destination cannot be asked. An unknown outcome ends the run as
	// needs_human.
	PromisesNothing Promise = 0
	// IdempotentByKey: a request repeated with the same operation id acts
	// once. An unknown outcome is dispatched again with the same id and
	// the same arguments.
	IdempotentByKey Promise = 1
	// LookupByKey: the destination can say whether the operation id took
	// effect ([EffectSpec.Lookup]). An unknown outcome is looked up, and
	// dispatched again only if the lookup says it is absent.
	LookupByKey Promise = 2
)

// String names p as records, explain, doctor and the viewer do:
// "idempotency_key", "lookup", "idempotency_key+lookup" or "none". The
// public Promise, the recorded contract and these names are one concept:
// Promise is its spelling in Go, and both go through contract.
func (p Promise) String() string { return p.contract().String() }

func (p Promise) contract() ops.Contract {
	return ops.Contract{Idempotent: p&IdempotentByKey != 0, Lookup: p&LookupByKey != 0}
}

// Outcome is what a destination confirmed. It is recorded on the
// operation and shown to the model.
type Outcome struct {
	// ExternalID is the destination's own id for the effect: a ticket
	// number, a payment id.
	ExternalID string
	// Result is an optional JSON document the destination answered.
	Result json.RawMessage
}

func (o Outcome) ops() ops.Outcome { return ops.Outcome{ExternalID: o.ExternalID, Result: o.Result} }

// Reject is what Dispatch returns when the destination definitely refused
// the request (a validation error, a 4xx): the effect did not happen and
// repeating it will not change that. The operation is recorded as failed
// and the model is told why. Any other error means "outcome unknown".
func Reject(format string, args ...any) error {
	return &ops.Rejected{Reason: fmt.Sprintf(format, args...)}
}

// IsRejected reports whether err (or an error it wraps) was made by
// [Reject]: what a unit test of a Dispatch checks.
func IsRejected(err error) bool {
	var r *ops.Rejected
	return errors.As(err, &r)
}

// EffectSpec describes an external side effect and its destination.
type EffectSpec[A any] struct {
	// Dispatch performs the effect for operationID with args, and must
	// send operationID to the destination as its idempotency key where it
	// takes one. It is called only after the intent is durably recorded;
	// after a crash or an unknown outcome it may be called again with the
	// same operationID and the same args, but only where Promises allows.
	// Required. An error is an unknown outcome, unless made by [Reject].
	Dispatch func(ctx context.Context, operationID string, args A) (Outcome, error)
	// Lookup asks the destination whether operationID took effect: found
	// with its outcome, or not found. An error means "cannot tell now":
	// Keel asks again later. Required with LookupByKey, and only then.
	Lookup func(ctx context.Context, operationID string) (out Outcome, found bool, err error)
	// Promises declares what the destination guarantees.
	Promises Promise
	// Count, optional and for tests only, says how many times the
	// destination applied operationID: `keel crashtest` compares it with
	// Keel's records to find a duplicate, which Lookup (found or not)
	// cannot show. Point it at a sandbox of the destination that keeps
	// such a count. A run never calls it; an error means "cannot tell".
	Count func(ctx context.Context, operationID string) (int, error)
	// Destination names the destination in operation records and
	// reports (default: the tool's name).
	Destination string
	// ConfirmOnce asks a person once per session instead of for the exact
	// arguments of every call.
	ConfirmOnce bool
	// Prepare, when set, runs before the intent is recorded: it may refuse
	// the call (the model is told why; nothing is recorded as dispatched)
	// and names the hash of the artifact the effect carries, if any, which
	// is recorded with the intent. It may run more than once.
	Prepare func(ctx context.Context, args A) (artifactSHA256 string, err error)
}

// Effect is a tool that changes the outside world, performed under Keel's
// operation protocol: a person approves the exact arguments (their hash is
// bound to the approval; changed arguments need a new approval), the intent
// is recorded with an application-owned operation id before dispatch,
// Dispatch runs with that id as idempotency key, its outcome is recorded
// before the run moves on, and after a crash every pending operation is
// reconciled first — looked up, dispatched again with the same id where the
// destination promises it, or else handed to a person as needs_human.
// Leases and fencing stay inside the runtime: a worker that lost the run
// never dispatches.
//
// Arguments are as for [ReadOnly]. The context of Dispatch, Lookup and
// Prepare carries [CurrentCall] (with the OperationID) and the artifact
// store.
func Effect[A any](name, description string, spec EffectSpec[A]) Tool {
	if spec.Promises&^(IdempotentByKey|LookupByKey) != 0 {
		return Tool{name: name, err: fmt.Errorf("effect %q: unknown Promises bits %#x", name, uint8(spec.Promises))}
	}
	f := agentdef.EffectFuncs[A]{Contract: spec.Promises.contract(), Destination: spec.Destination,
		ConfirmOnce: spec.ConfirmOnce, Prepare: spec.Prepare, Count: spec.Count}
	if d := spec.Dispatch; d != nil {
		f.Dispatch = func(ctx context.Context, opID string, a A) (ops.Outcome, error) {
			out, err := d(ctx, opID, a)
			return out.ops(), err
		}
	}
	if l := spec.Lookup; l != nil {
		f.Lookup = func(ctx context.Context, opID string) (ops.Outcome, bool, error) {
			out, found, err := l(ctx, opID)
			return out.ops(), found, err
		}
	}
	return newTool(name)(agentdef.Effect(name, description, f))
}
