// Package tickets is a small ticket service and its client: the external
// destination of the triage example.
//
// The service ([Server], an http.Handler) keeps tickets and customer
// profiles in memory and checks a bearer token on every request. Its one
// write, POST /tickets/{id}/updates, takes an Idempotency-Key header: an
// update is applied once per key, and a repeat with the same key and the
// same body is answered with the first answer. The service offers no way
// to ask whether a key was applied, so a client that lost an answer can
// only send the same request again — which is what Keel does for an effect
// declared keel.IdempotentByKey without a Lookup.
//
// The API:
//
//	GET  /tickets/{id}                 a ticket
//	GET  /tickets/{id}/similar?limit=N open tickets sharing a tag with it
//	GET  /customers/{id}               a customer's private profile
//	POST /tickets/{id}/updates         {"status", "reply"}, Idempotency-Key required
//
// Errors are {"error": "..."} with 400 (malformed request), 401 (no or
// wrong token), 404 (no such ticket or customer) or 422 (a valid request
// the service refuses: a bad status, a reply too long, a closed ticket, a
// key reused with another body). [Client] returns them as *[StatusError].
package tickets
