// Package keel makes your agent durable: it moves an AI agent out of a
// request handler into background work that survives crashes, deploys and
// days-long approvals, without ever performing a side effect twice.
//
// You declare an [Agent] — instructions, a [Model], and tools — and hand it
// to [Main] from your main package (or to [MainFunc], when building the
// agents needs configuration of their own that client commands such as
// `run` and `approve` should not demand). That one program is then everything
// Keel runs: `go run . dev` starts the embedded runtime on this machine
// (SQLite and files, no cloud), and the same binary, deployed by Keel's CDK
// app, is every Lambda function (api, step, approval, finalize, schedule)
// and the Fargate task on AWS.
//
//	func main() {
//		keel.Main(keel.Agent{
//			Name:         "triage",
//			Instructions: "Sort incoming tickets ...",
//			Model:        keel.ModelSpec("anthropic:claude-sonnet-4-5"),
//			Tools: []keel.Tool{
//				keel.ReadOnly("search_tickets", "Find similar tickets", tickets.Search),
//				keel.Effect("update_ticket", "Set status and reply", keel.EffectSpec[UpdateArgs]{
//					Dispatch: tickets.Update, // func(ctx, operationID string, args UpdateArgs) (keel.Outcome, error)
//					Promises: keel.IdempotentByKey,
//				}),
//			},
//		})
//	}
//
// # Tools
//
// Three kinds, by what a call may do to the world:
//
//   - [ReadOnly]: no external effect. Runs as soon as the model calls it,
//     maybe again after a crash.
//   - [ConfirmOnce]: no external effect, but a person allows it once per
//     session (e.g. reading a customer's private data).
//   - [Effect]: changes the outside world. A person approves the exact
//     arguments, and Keel performs it under the operation protocol below.
//
// A tool's arguments are a Go struct, its JSON Schema reflected from the
// struct; every call is validated before it is recorded, approved or run.
// Arguments are shown to the model, stored and hashed: credentials never go
// there. A tool gets its credentials from the runtime — the client you
// construct in main — and its run, checkpoint and artifacts from its
// context ([CurrentCall], [ReportProgress], [SaveArtifact],
// [LoadArtifact]).
//
// # The rules an effect is kept to
//
// Keel records the intent of every effect — an application-owned operation
// id, the arguments' hash, the destination — durably before it calls your
// Dispatch, passes that id as the idempotency key, and records the outcome
// before the run moves on. If the process dies or the answer is lost in
// between, the outcome is unknown, and an unknown outcome is never taken
// for "nothing happened": on recovery every pending operation is reconciled
// first, by what the destination declared in [EffectSpec.Promises] —
// looked up ([LookupByKey]), sent again with the same id and arguments
// ([IdempotentByKey]), or handed to a person as needs_human
// ([PromisesNothing]). A changed action needs a new approval. Your code
// never sees leases or fencing tokens: a worker that lost the run cannot
// dispatch.
//
// # Runs
//
// Runs are created over the HTTP API (`keel run AGENT INPUT`, POST
// /v1/runs) or by an EventBridge schedule. Each run is bounded by [Limits]
// (steps, tool calls, tokens, spend, a deadline), the agent's defaults
// filling what the run leaves out, and takes new input by its
// [InputPolicy]. Every Step is a bounded piece of work — lease, reconcile,
// model call, tools, one durable commit — so any worker can take any run
// next, and a wait for a person costs nothing while it lasts.
//
// # Testing
//
// [Dev] runs the embedded runtime inside a test or a program; package
// keeltest wraps it (and your program's `dev` in a child process you can
// SIGKILL and restart) for tests. [ScriptedModel] makes runs deterministic.
package keel
