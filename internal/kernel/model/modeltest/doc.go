// Package modeltest is the conformance suite every model provider runs:
// a test HTTP server that replays recorded streams in the provider's own
// wire format, and the list of failures each provider, wrapped in the
// transport, must survive (cuts, stalls, 429, 5xx, malformed events) with
// the same accumulated result.
//
// The server only frames bytes; the provider's client — the official SDK's
// (OpenAI, Bedrock) or Keel's own over net/http (Anthropic) — pointed at it
// by base URL, does all the encoding and decoding. That is what is under
// test, so a hand-written client is held to what the SDK it replaced
// passed, request body included.
package modeltest
