// Package api serves Keel's HTTP API: start a run, follow its event log
// (as JSON pages or a live Server-Sent Events stream), decide its approvals,
// cancel it, send it input, fork it from a checkpoint, and download its
// artifacts. The same [http.Handler] is served by `keel dev` and, on AWS, by
// API Gateway through functions/api.
//
// Contracts:
//
//   - Every response body is JSON except SSE streams, artifact downloads and
//     the viewer's page and assets.
//     Every error is {"error": {"code", "message", "field"?}}: code is a
//     stable machine-readable string (see the Code* constants), field names
//     the request field, query parameter or header at fault.
//   - A 4xx response changes nothing stored: requests are validated in full
//     before the first write, and the store's own refusals (ErrConflict,
//     ErrHashMismatch, ErrTerminal, ErrIllegalTransition) write nothing.
//   - A 5xx response never carries the text of an internal error: the error
//     is logged with the request's method and path, and the client gets a
//     generic message.
//   - GET / and GET /ui/{file} serve the web run viewer (internal/observe/viewer):
//     static, public, no data; the page calls the /v1 routes with a token.
//   - Every /v1 route requires a principal from the [Authenticator]; a run
//     belongs to the principal that created it, and any other principal gets
//     404 for it, exactly as for an id that does not exist.
//   - POST /v1/runs is idempotent on the Idempotency-Key header (per
//     principal): the same key returns the same run with 200 and starts it
//     again through [Starter] (which is idempotent), so a client that lost
//     the first answer, or a server that crashed between storing and
//     starting, heals by retrying. The same key with another agent, input or
//     session is 409.
//   - After a decision or a cancellation the handler calls [Resumer] for the
//     affected approvals. If that fails the decision is still recorded: the
//     client gets 503 resume_failed, and repeating the same decision (which
//     is then 409 approval_not_pending) wakes the run again, because Resume
//     is idempotent.
//   - Input under the rollback policy is refused with 409
//     input_policy_rollback, pointing at POST /v1/runs/{id}/fork: a rollback
//     is a new run from a chosen checkpoint, and the caller must choose it.
//
// The package holds no package-level state: everything lives in the value
// [New] returns, built from its [Deps].
package api
