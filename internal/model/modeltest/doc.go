// Package modeltest is the conformance suite every model provider runs:
// a test HTTP server that replays recorded streams in the provider's own
// wire format, and the list of failures each provider, wrapped in the
// transport, must survive (cuts, stalls, 429, 5xx, malformed events) with
// the same accumulated result.
//
// The server only frames bytes; the provider's official SDK client, pointed
// at it by base URL, does all the decoding. That is what is under test.
package modeltest
