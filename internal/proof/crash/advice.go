package crash

import (
	"fmt"
	"slices"

	"github.com/keelrun/keel/internal/kernel/run"
)

// A row crashtest could not verify is not a pass: a proof tool that prints
// green on what it did not check is worse than none (issue 25). These are
// the ways a program's effect row ends unverified or failed, each with
// what its author can do about it. The texts name the public API
// (keel.EffectSpec) since that is what the reader edits.

// unverifiable reports why an operation's outcome at its destination
// cannot be checked, or "". An operation Keel dispatched at most once and
// recorded needs no check (a second application needs a second send), nor
// one Keel handed to a person (needs_human says Keel does not know), nor a
// pending one (a violation of its own).
func unverifiable(op run.Operation, o Observation) string {
	switch {
	case o.Error != "":
		return fmt.Sprintf("its %s could not answer: %s", askedBy(o.By), o.Error)
	case o.By != "" || op.Status == run.OpNeedsHuman || op.Status == run.OpPending:
		return ""
	case op.Attempts > 1:
		return fmt.Sprintf("dispatched %d times, and the effect has no Count hook and no Lookup: whether the destination applied it more than once cannot be checked", op.Attempts)
	}
	return ""
}

func askedBy(by string) string {
	switch by {
	case "count":
		return "Count hook"
	case "lookup":
		return "Lookup"
	}
	return "destination"
}

// Advice for each kind of problem, for the effect named.
func adviceCannotAsk(effect string) string {
	return fmt.Sprintf("%s: let crashtest ask the destination. Either add a Lookup to its keel.EffectSpec (declare keel.LookupByKey) "+
		"that searches by the operation id Dispatch sent as the idempotency key; or, if the destination keeps no such promise, "+
		"declare the promise it really keeps (keel.PromisesNothing: an unknown outcome goes to a person, and the rows show needs_human "+
		"instead of a second dispatch); or add a Count hook (tests only) against a sandbox of the destination that counts each "+
		"operation id. --accept-unverified passes the run anyway, on your word", effect)
}

func adviceAskFailed(effect, by string) string {
	return fmt.Sprintf("%s: its %s failed; check that crashtest's processes reach the destination (--env K=V passes its URL and "+
		"credentials) and that it answers for every operation id Dispatch sent", effect, askedBy(by))
}

func adviceDuplicate(effect string) string {
	return fmt.Sprintf("%s: the destination applied one operation id twice, so it does not keep the promise the effect declares. "+
		"Make Dispatch send the operation id as the destination's idempotency key (if it takes one); or declare the promise it "+
		"really keeps (drop keel.IdempotentByKey; keel.PromisesNothing sends an unknown outcome to a person as needs_human); "+
		"or add a Lookup by operation id (keel.LookupByKey) so Keel asks before sending again", effect)
}

func adviceNotFound(effect, by string) string {
	if by == "lookup" {
		return fmt.Sprintf("%s: Keel recorded the effect, but its Lookup does not find it: the Lookup must search by the operation id "+
			"that Dispatch sent as the idempotency key (the operationID argument of both), and return the destination's id for it", effect)
	}
	return fmt.Sprintf("%s: Keel recorded the effect, but its Count hook does not see it: the hook must count by the operation id "+
		"Dispatch sent as the idempotency key, at the destination Dispatch writes to", effect)
}

// adviceInProcess is for a destination that holds nothing of a run nobody
// killed: the in-memory stand-in of a scaffold or a test, which the
// observing process (another process of the program) sees empty.
func adviceInProcess(effect string) string {
	return fmt.Sprintf("%s: this destination answers not-found for every operation, even in the unkilled run: it must outlive the process. "+
		"crashtest asks it from another process of your program after the killed ones ended, so a destination kept in the program's "+
		"memory (a map, an in-memory fake) is empty there. Point Dispatch and Lookup at a destination outside the process: a sandbox "+
		"of your service, a database, or files in a directory (pass its address with --env K=V)", effect)
}

func adviceRejected(effect string) string {
	return fmt.Sprintf("%s: Dispatch returned keel.Reject although the destination applied the effect: Reject only a definite "+
		"refusal; any other failure is an unknown outcome (a plain error)", effect)
}

// adviceKeel is for a failure no declaration of the effect explains.
const adviceKeel = "this is Keel's fault, not your effect's: report it with the events above and the kept directory"

// unverified records an operation the check could not verify, and what
// to do about it.
func (v *Verdict) unverified(op run.Operation, why, advice string) {
	v.Unverified = append(v.Unverified, fmt.Sprintf("UNVERIFIED: %s operation %s (%s, %d dispatches): %s", op.Tool, op.ID, op.Status, op.Attempts, why))
	v.advise(advice)
}

// advise adds advice once.
func (v *Verdict) advise(a string) {
	if !slices.Contains(v.Advice, a) {
		v.Advice = append(v.Advice, a)
	}
}
