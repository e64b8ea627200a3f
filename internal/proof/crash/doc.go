// Package crash is Keel's crash-point and fault suite: it proves, by
// killing real processes, that Keel never performs an external effect
// twice, never loses an approval, and always ends with the external world
// and its own records agreeing.
//
// Every scenario runs in a world of its own: a publication server (the
// external destination, a separate process that fsyncs every effect it
// receives to a log) and successive incarnations of `keel dev` on one data
// directory. An incarnation is armed with KEEL_FAULTPOINT (it SIGKILLs
// itself there) or killed by the suite with SIGKILL to its process group
// at a random moment; the suite then starts a fresh one on the same
// directory, approves the exact action when the run asks, and lets the run
// end. Nothing is simulated inside the runtime: the kills are real, the
// store is the SQLite file (or a DynamoDB table), the destination is HTTP.
//
// With Config.Store "dynamo" every scenario runs keel dev on the DynamoDB
// store and S3 artifacts, a table and a bucket of its own, at an endpoint
// that outlives the processes the suite kills (Config.AWS: served by the
// suite's process, LocalAWS with internal/proof/crash/localaws, or the caller's,
// ExternalAWS; `crash -moto` starts moto for it). keel dev gets a short
// step budget and lease TTL there by default (Config.Lease): a restart
// does not end a dead incarnation's lease on a shared table, it runs out.
// Lease "default" keeps keel dev's own settings, on either store, and the
// suite's hang guards grow by what such a lease can hold a run.
//
// After each run the suite reads Keel's records through the HTTP API
// (run, events, approvals) and, once keel dev has stopped, the operations
// and plan items through the store (a copy of the SQLite file, or the
// table; the API does not show operations), and checks the invariants
// documented on Check against the destination's own log. They are the
// same for both stores. Beyond the destination's count, they hold the
// records to the protocol: no run ended over an operation it has not
// settled, and no needs_human run moved without a person's decision
// (settled.go).
//
// Matrix plays every hit of every fault point, contract variants, and the
// scenarios beyond fault points (two workers on one run, a stale worker
// fenced, cancellation of an in-flight call, a provider that times out and
// cannot confirm, a model stream cut inside a tool call's arguments, faults
// inside the long-running task child). Soak plays N randomized runs.
//
// Sim is the simulator of issue 40 (sim*.go): a seeded script of random
// steps over a pool of runs in one world at a time — create with and
// without Idempotency-Key (and a key repeated), decide through the API, a
// one-time link (read from a webhook the simulator serves) and MCP,
// raise and stop, settle, cancel, input under each policy, fork, restarts,
// SIGKILLs at random moments, racing a decision, and at fault points
// (the harness's and before_wake) — with safety checked after every step
// (nothing twice at the destination, every decision keel accepted stands,
// no run ended over an unsettled operation, needs_human left only by a
// person) and liveness at every quiesce (each run not ended is moved by
// keel, or its person's command named by its records is accepted and
// moves it). A failing simulation writes its script for Sim's Replay.
//
// The suite can fail: built with `-tags keel_skip_reconcile`, keel skips
// reconciliation, and the after_dispatch row reports a duplicate
// publication (TestBrokenBuildIsCaught).
//
// ProgramMatrix plays a user's own agent the same way (keel crashtest):
// the program's binary instead of keel, no publication server, and the
// destination observed through an EffectCounter — ProgramCounter asks the
// program itself (its hidden crashtest-observe command), which answers
// with each effect's count hook or Lookup. An unkilled run armed with
// KEEL_FAULTPOINT=* first counts each point's hits; then every point is
// killed at its first hit (or every hit), and a soak kills at random
// moments. Check holds each operation to its observation (checkEffects).
// An operation it cannot check — dispatched more than once with neither
// a count hook nor a Lookup, or whose count or Lookup failed — makes its
// run unverified, which crashtest does not call a pass (advice.go).
//
// Contracts: Play ends every process it started before it returns, and
// keeps a failing scenario's directory (logs, data, the destination's log)
// for inspection. No assertion depends on wall-clock time; time bounds are
// hang guards only.
package crash
