// Package telemetry holds what an operator reads after the fact: the debug
// bundle of a run, and the timeline of spans rebuilt from its records
// that the bundle's trace.json, tool_calls.csv and `keel explain` share.
//
// The bundle is one tar.gz artifact, debug-bundle-{status}.tar.gz, written
// by Finalize when a run ends failed or needs_human (and built on demand by
// GET /v1/runs/{id}/bundle for any run) with seven files:
//
//	events.jsonl       every event, in seq order, as stored
//	checkpoints.jsonl  every checkpoint's metadata (not its state)
//	last_state.json    the run row, the transcript at its last checkpoint,
//	                   what is still open (plan items, operations, approvals)
//	trace.json         the run's spans in OTLP/JSON (see BuildTrace)
//	tool_calls.csv     ts, tool, input_hash, latency_ms, status, error
//	env.txt            Keel version and commit, models, masked configuration
//	workspaces.json    each checkpoint's workspace version and manifest
//	                   (paths, modes, sizes, sha256), not the files' content
//
// A bundle holds records only: arguments, results and texts the runtime
// already stored. Credentials never reach those records (tools get them
// from their constructors, and the harness redacts what a tool declares
// secret), approvals' task tokens are never serialized, and env.txt masks
// every credential of the configuration; so no secret reaches a bundle.
// trace.json captures no prompt, answer or argument content: names, counts,
// hashes and ids only.
package telemetry
