// Package harness is the one component of Keel that decides. [Harness.Step]
// runs agent iterations for one run until a decision point or its time
// budget, and returns a small [Decision] that Step Functions (through the
// step Lambda), the Fargate task and `keel dev` route on.
//
// A Step keeps these rules; they are contracts, and the tests in this
// package hold each of them:
//
//  1. One active writer. A Step first takes the run's lease, which bumps the
//     fencing token. Every later write of the Step is conditional on that
//     token. A Step that is fenced (store.ErrFenced) stops at once, writes
//     nothing more and returns a *FencedError. A Step that finds the lease
//     held returns a busy wait Decision (Next wait, Busy): contention is
//     never an error the state machine could count down to a failed run.
//  2. Durable before acknowledged. A Step returns a Decision only after the
//     run row, its events and its checkpoint are committed, in one
//     transaction per iteration. A plain iteration (model call, read-only
//     tool calls) is exactly one store write.
//  3. Reconcile first. Before anything else, every pending operation of the
//     run is reconciled through its destination (package ops): found →
//     recorded; idempotent or absent at lookup → re-sent with the same
//     operation id; otherwise the run ends needs_human. A lost response is
//     never read as "nothing happened".
//  4. Side effects use the operation protocol. The intent (application-owned
//     operation id, args hash, artifact hash, destination) is committed as
//     pending before dispatch; the operation id is the idempotency key; the
//     outcome is committed before the run moves on.
//  5. Permission modes. safe_readonly runs; confirm_once needs a session
//     grant, and its first use asks; mutating asks for the exact args hash
//     every time. A decision on another hash is refused by the store; a
//     re-planned call with changed args gets a new approval. The wait is a
//     Decision ("approval"), never a process that stays up.
//  6. Bounds. Deadline and step limits end the run failed with a
//     budget_exceeded event. Token, spend and tool-call use is reserved
//     before a call (in the store when calls run concurrently) and settled
//     in the step's commit. A model error that calling again cannot fix (a
//     *model.CallError whose last attempt is a client error: a 4xx other
//     than 429) fails the run at once, with the provider, status and
//     request id in run_failed; every other model error is a
//     RetryableError.
//  7. Cancellation stops new model and tool calls and is recorded; an
//     effect already in flight is recorded, not undone.
//  8. New input follows the run's policy: queue (next turn), interrupt (after
//     the current tool), reject and rollback (refused or forked by the API).
//     Queued inputs are taken oldest first in batches that fit one commit
//     (store.MaxItemsPerCommit by store.CommitItems, and store.MaxText
//     bytes of text): any number of them makes as many turns as needed,
//     never a commit the store refuses.
//  9. The transcript is an append-only log of message deltas: each
//     checkpoint holds only what its step added and points to its parent, so
//     a checkpoint costs O(1) in the run's length. Forks and replays reuse
//     recorded tool results and never repeat an external effect.
//     A model call is sent the task and the most recent part of the
//     transcript that fits the agent's ContextTokens (Request.Omitted
//     counts the rest); a worker keeps no more than that of a run between
//     calls, so its memory for a run is bounded by the window, not by the
//     run's age, and a Step after a restart sends exactly what a warm one
//     would (TestRunCacheHoldsTheWindowOnly).
//  10. Secrets never reach the model, events or checkpoints: tools get
//     credentials from their constructors, not their arguments, and a tool
//     that holds one names it (tool.SecretHolder): the harness replaces it
//     with "[redacted]" in every result, error, progress note and outcome
//     it records or shows the model (TestSecretsNeverRecorded plants
//     canaries and greps every record, log and file).
//  11. A tool's panic is its error, not the worker's end. A panic in Run or
//     in an effect's Intent, Dispatch or Lookup is recovered around that
//     one call, logged once with its stack ("tool panicked"), and recorded
//     as "tool X panicked: <value>" ([PanicError]); the call then goes the
//     way of an error it returned: the item fails (Run, Intent), the
//     outcome is unknown (Dispatch), the destination could not answer
//     (Lookup). A run that fails anyway with an operation in flight (a
//     panic that escaped the Step) has it handed to a person by Finalize,
//     never left pending (TestEffectPanic,
//     TestFinalizeHandsOverAnOperationInFlight).
//
// The shape that keeps these rules readable: a Step is a loop (step.go)
// over four values — the transcript (messages, window, open calls), the
// plan (items by call), the cursor (where the last commit left the run)
// and the pending commit (what the next commit writes). Every feature is
// a function of the values it needs, so its signature says what it may
// change, and the pending commit is the one caller of Store.Commit, so
// rule 2 is kept in one place. TestHarnessShape in
// internal/proof/repocheck holds that shape.
package harness
