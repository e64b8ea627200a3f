// Package model is the seam between the harness and language models.
//
// Providers (anthropic, openai, bedrock, scripted) implement [Streamer]: one
// streamed call, as a sequence of [Chunk]s. The transport layer wraps a
// Streamer into a [Model] that returns only complete responses: a stream that
// ends before its final chunk is a failed call, its fragment dropped, and a
// tool call is returned only when its JSON arguments are complete and parse.
// The harness sees nothing else.
//
// # The transport rules
//
// [NewTransport] keeps them for every provider alike:
//
//   - Whole-call retry. A cut stream, a stall, a malformed event, a 5xx, a
//     429 or a broken connection fails the attempt; the call is made again
//     from the start, at most MaxAttempts times, with exponential backoff
//     and jitter between tries (a 429 waits its retry-after instead).
//     Nothing of a failed attempt is returned or dispatched.
//   - Idle timeout. No chunk for IdleTimeout (before the first one too)
//     cancels the attempt's context: a stall, retried.
//   - Rate limits. A 429 is counted per run and per endpoint
//     ([RateLimitCounters]); a retry-after up to MaxInlineWait is slept
//     through, a longer one (or 429s until the attempts run out) returns
//     *[RateLimitedError] so that the harness waits durably, not in a Lambda.
//   - Client errors. Any other 4xx is returned at once: a *[CallError]
//     wrapping the provider's *[StatusError], which names the provider,
//     the status and the request id.
//   - One token budget. A [TokenLimiter] shared by the process caps tokens
//     per minute across all concurrent calls: each call reserves an
//     estimate before it starts and settles to its real usage after.
//   - Cost. Response.CostMicroUSD comes from a [PriceTable].
//   - Records. Every failed attempt, in order, is in Response.Attempts of
//     a success, or in the Attempts of a *CallError / *RateLimitedError, so
//     that the harness writes one event per attempt.
//
// Errors, by what the harness does with them: *RateLimitedError → a durable
// wait of RetryAfter, then the same call again; *CallError wrapping a
// *StatusError 4xx → the request is wrong (fix it, do not repeat it);
// *CallError wrapping ErrIncomplete, ErrMalformed, a 5xx or a connection
// error → the provider failed MaxAttempts times in a row (a step-level
// retry later may succeed); a context error → the caller gave up.
//
// Providers report an HTTP failure as *StatusError, a stream event that
// does not decode as an error wrapping [ErrMalformed], and never put an API
// key in an error (see [Redact]).
package model
