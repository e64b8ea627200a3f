// Package openai is the OpenAI Chat Completions provider: one streamed call
// per Stream (POST BaseURL/chat/completions), mapped to model chunks, over
// net/http and encoding/json — no SDK. The official Go SDK it used before
// was ~18 MB of a step bootstrap; this client passes the same conformance
// suite (internal/kernel/model/modeltest) against the same recorded streams,
// request body included.
//
// Contracts:
//   - each Stream sends one request and retries nothing; it reads no
//     environment (no OPENAI_API_KEY, no OPENAI_BASE_URL); whole-call
//     retries belong to model.NewTransport;
//   - every call asks for stream_options.include_usage, so the last data
//     chunk carries the usage; a stream is complete only when it ends
//     cleanly (at data: [DONE], or at the end of the body) after a
//     finish_reason and that usage chunk. Anything else is a fragment the
//     transport drops;
//   - finish_reason maps to the model stop reasons (stop → end_turn,
//     tool_calls → tool_use, length → max_tokens,
//     content_filter → content_filter);
//   - usage: prompt_tokens counts cached tokens, so InputTokens is
//     prompt_tokens − cached_tokens and CacheReadTokens is cached_tokens;
//   - an HTTP error is a *model.StatusError with the x-request-id header and
//     retry-after(-ms); an error object inside the stream is a StatusError
//     too (429 for a rate limit, 500 otherwise); a chunk that does not
//     decode wraps model.ErrMalformed;
//   - only the first choice is read;
//   - the API key is sent as a bearer token and redacted from every message
//     the API returns; only error.message of an error body is surfaced,
//     never the raw body.
package openai
