// Package dynamo implements store.Store on one DynamoDB table through
// aws-sdk-go-v2 (client injected, so the same code runs against AWS,
// LocalStack or an in-process test server).
//
// # Table
//
// One table, string keys pk (partition) and sk (sort). Numbers are N,
// payloads B, times are Unix nanoseconds (N), so no precision is lost.
// Empty strings and zero payloads are not stored.
//
//	pk                         sk                   item
//	RUN#{run_id}               RUN                  the run row
//	RUN#{run_id}               EV#{seq:020d}        one event (seq zero-padded: sk order = seq order)
//	RUN#{run_id}               CP#{seq:020d}        one checkpoint, in seq order
//	RUN#{run_id}               CPID#{id}            checkpoint id → seq
//	RUN#{run_id}               OP#{op_id}           one operation
//	RUN#{run_id}               AP#{approval_id}     one approval (with its task token)
//	RUN#{run_id}               PI#{plan_item_id}    one plan item
//	RUN#{run_id}               IN#{input_id}        one queued input
//	RUN#{run_id}               NTF#{id}             one notification (the outbox record)
//	OUTBOX                     {len}:{run_id}#{id}  a pending notification's due marker (deleted when it finishes)
//	SESSION#{session_id}       SESSION              the session (owner)
//	SESSION#{session_id}       GRANT#{tool}         a confirm_once grant
//	CKEY#{len}:{owner}#{key}   CKEY                 client idempotency key → run id
//
// Four global secondary indexes list runs newest first. Only run rows carry
// their key attributes (sparse indexes); each sorts on g_sort =
// {created_at:020d}#{run_id}, so ties on time order by id:
//
//	runs-all         g_all = "RUN"        every run
//	runs-by-status   g_status = status
//	runs-by-session  g_session = session id
//	runs-by-owner    g_owner = owner
//
// The indexes project only keys plus g_owner and g_status (to filter a
// combined query); ListRuns then reads the full rows with BatchGetItem.
// Keeping the projection small means a step commit, which rewrites the run
// row, does not rewrite four index copies of it: an index is written only
// when an attribute it holds changes (status changes, run creation).
// Index reads are eventually consistent on DynamoDB: a run may appear in
// ListRuns a moment after CreateRun returns, and ListRuns re-checks each
// row's status/owner/session against the filter after reading it.
//
// # One write request per method
//
// Every method makes at most one DynamoDB write request on its normal path:
//
//   - AcquireLease is one conditional UpdateItem that bumps lease_token
//     (condition: run exists, not finished, lease free, expired or ours).
//   - Commit is one TransactWriteItems. Its first action is a conditional
//     Update of the run row on lease_token (the fence) and on ver, a
//     counter bumped by every write that appends events; event puts are
//     conditioned on attribute_not_exists. The store assigns event seqs
//     from last_seq, which it knows from ver. A cancellation because ver
//     moved (another writer appended meanwhile) re-reads the row and
//     retries; a token mismatch is store.ErrFenced.
//   - Reserve is one conditional UpdateItem. DynamoDB
//     conditions cannot add, so the row keeps, per resource, used,
//     reserved and their sum (tok_total, spend_total, calls_total); Reserve
//     passes limit − request as the value the sum must not exceed.
//   - CreateRun, AppendEvents, DecideApproval, RequestCancel and
//     EnqueueInput are one TransactWriteItems each.
//
// To make a plain step's Commit exactly one request, the store keeps, per
// run, what it last knew of the row (ver, last_seq, status, checkpoint seq,
// limits): AcquireLease, Reserve, GetRun and every successful write refresh
// it. A stale entry costs a failed transaction, a re-read and a retry; it
// is never trusted for the fence, which is always a condition in the write.
// Limits never change after creation, so Reserve reads them from that
// entry too.
//
// Every TransactWriteItems carries a ClientRequestToken, fresh per logical
// attempt, so an SDK retry of a request that did succeed is answered with
// success instead of being applied again (which would otherwise fail the
// ver condition and be retried as a second append). Throttling and
// transient errors are retried by the SDK's retryer; TransactionConflict
// cancellations are retried here with backoff.
//
// Errors from DynamoDB are mapped to the store's sentinels at this seam:
// ConditionalCheckFailed on the run row becomes ErrNotFound, ErrFenced,
// ErrLeaseHeld, ErrTerminal or ErrBudgetExceeded after a consistent read of
// the row says which condition failed; a TransactionCanceled reason is
// mapped by the position of the failed action.
//
// # Checkpoints and S3
//
// Checkpoint state longer than Options.SpillThreshold (64 KiB by default)
// is written to the injected artifact.Store (S3 in production) before the
// transaction, under runs/{run_id}/checkpoints/{checkpoint_id}/state.{sha256},
// and the item holds that key and the hash. GetCheckpoint reads it back and
// returns it as State, verified: a blob whose hash does not match is an
// error wrapping artifact.ErrCorrupt. A transaction that fails after the
// upload leaves an unreferenced blob, which is harmless. Without an
// artifact store, state up to store.MaxInlineState stays inline.
//
// # Limits
//
// A TransactWriteItems holds at most 100 actions and 4 MB: Commit refuses
// (store.ErrInvalid) more than store.MaxItemsPerCommit records or more
// than 3.5 MB of payload. An item holds at most 400 KB; a run row whose
// request, command, output and error texts together approach that is
// refused by DynamoDB (ValidationException, returned wrapped).
package dynamo
