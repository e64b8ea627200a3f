// Package openai is the OpenAI Chat Completions provider: one streamed call
// per Stream, through the official SDK (github.com/openai/openai-go/v3),
// mapped to model chunks.
//
// Contracts:
//   - the SDK retries nothing (WithMaxRetries(0)); whole-call retries
//     belong to model.NewTransport;
//   - every call asks for stream_options.include_usage, so the last data
//     chunk carries the usage; a stream is complete only when it ends
//     cleanly after a finish_reason and that usage chunk. Anything else is
//     a fragment the transport drops;
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
//   - the API key is sent in a header and redacted from every message the
//     API returns.
package openai
