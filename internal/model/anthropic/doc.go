// Package anthropic is the Anthropic Messages API provider: one streamed
// call per Stream, through the official SDK
// (github.com/anthropics/anthropic-sdk-go/v2), mapped to model chunks.
//
// Contracts:
//   - the SDK retries nothing (WithMaxRetries(0)) and reads no environment;
//     whole-call retries belong to model.NewTransport;
//   - a stream is complete only at message_stop; anything before it is a
//     fragment the transport drops;
//   - an HTTP error, or an error event inside the stream, is a
//     *model.StatusError carrying the status (an in-stream overloaded_error
//     is 529, rate_limit_error 429), the request-id header and retry-after;
//   - an event whose JSON does not decode wraps model.ErrMalformed;
//   - usage maps input_tokens to InputTokens (Anthropic counts cache tokens
//     apart already), cache_read_input_tokens to CacheReadTokens and
//     cache_creation_input_tokens to CacheWriteTokens;
//   - the API key is sent in a header and redacted from every message the
//     API returns; the SDK's own error text (which embeds the raw body) is
//     never surfaced.
package anthropic
