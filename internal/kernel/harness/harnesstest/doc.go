// Package harnesstest is the kernel's own test agent, as raft tests on its
// inmem store: a real [harness.Harness] over the SQLite store and the
// file artifact store, answered by the scripted model, whose side effects
// land in a [Ledger], a destination whose promises (a lookup by operation
// id, honoured idempotency keys) are switches.
//
// The kernel tests itself on it rather than on the product's research
// agent (internal/fixture), which is written on package keel and so
// links compose and every backend: with harnesstest, a kernel test binary
// links the kernel and these three test backends only, and the fence test
// of package harness (TestKernelTestFence) holds it there.
//
// What it offers:
//   - [Env]: one store, one artifact store and a settable [Clock] in a
//     test's temporary directory, and the few moves a harness test makes
//     (create a run, step it to a decision, decide its approval, read its
//     events).
//   - [Ledger] and [Note]: an effectful tool and the destination it
//     changes, for the operation protocol's cases (found by lookup,
//     re-sent under its key, handed to a person; a lost response, a
//     timeout).
//   - [Env.ReportAgent]: a scripted run through read-only tools (one
//     reporting progress), an artifact, and an effect a person approves by
//     the artifact's exact hash — the shape of the research run, in kernel
//     types.
//
// Everything here fails the test through Env.T on an unexpected error:
// a helper returns only what a test asserts on.
package harnesstest
