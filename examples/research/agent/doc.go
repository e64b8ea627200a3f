// Package agent is the research agent: it collects documents,
// analyzes them (reporting progress), drafts a report as a content-addressed
// artifact, and — after a person approves the exact artifact hash —
// publishes it to a destination through the operation protocol.
//
// Two real destinations are provided: a directory (create-exclusive by
// operation id, looked up by id) and an HTTP endpoint (POST with
// Idempotency-Key, looked up with GET by operation id). The HTTP endpoint
// itself is [PublicationServer], which the demo and the crash suite run in
// a process of its own.
package agent
