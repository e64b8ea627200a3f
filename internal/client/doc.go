// Package client is a Go client of Keel's HTTP API (package api), used by
// the keel CLI, the demo and tests.
//
// Contracts:
//   - Every method returns the API's own error as *api.Error (with Status
//     set) when the server answers with an error; use errors.As. An answer
//     that is not Keel's JSON error (a proxy's 502 page) becomes an
//     *api.Error with code "http_<status>".
//   - Requests that are safe to repeat — GETs, and POSTs that carry an
//     Idempotency-Key — are retried on transport failures (connection
//     refused or reset, a timeout) with backoff; others are sent once.
//   - Follow delivers every event of a run exactly once and in order: it
//     reconnects with Last-Event-ID when a stream ends before the run does.
//   - Download checks the blob against its sha256 before returning it.
package client
