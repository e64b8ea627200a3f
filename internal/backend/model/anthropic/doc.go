// Package anthropic is the Anthropic Messages API provider: one streamed
// call per Stream, mapped to model chunks, over net/http and encoding/json
// — no SDK. Keel makes one call (POST /v1/messages with stream: true), and
// the official Go SDK, which it used before, was 7 MB of a step bootstrap
// (15.3 MB without it); this client passes the same conformance suite
// (internal/kernel/model/modeltest) the SDK-backed provider passed, against the
// same recorded streams, including the request body byte-for-byte as JSON.
//
// Contracts:
//   - each Stream sends one request and retries nothing; it reads no
//     environment; whole-call retries belong to model.NewTransport;
//   - a stream is complete only at message_stop; anything before it is a
//     fragment the transport drops; an event cut by the end of the body is
//     dropped (the EventSource rule), so a cut reads as an early end;
//   - an HTTP error, or an error event inside the stream, is a
//     *model.StatusError carrying the status (an in-stream overloaded_error
//     is 529, rate_limit_error 429), the request-id header and retry-after;
//   - an event whose JSON does not decode wraps model.ErrMalformed;
//   - usage maps input_tokens to InputTokens (Anthropic counts cache tokens
//     apart already), cache_read_input_tokens to CacheReadTokens and
//     cache_creation_input_tokens to CacheWriteTokens;
//   - the API key is sent in the x-api-key header and redacted from every
//     message the API returns; only error.message of an error body is
//     surfaced, never the raw body.
package anthropic
