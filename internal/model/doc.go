// Package model is the seam between the harness and language models.
//
// Providers (anthropic, openai, bedrock, scripted) implement [Streamer]: one
// streamed call, as a sequence of [Chunk]s. The transport layer wraps a
// Streamer into a [Model] that returns only complete responses: a stream that
// ends before its final chunk is a failed call, its fragment dropped, and a
// tool call is returned only when its JSON arguments are complete and parse.
// The harness sees nothing else.
package model
