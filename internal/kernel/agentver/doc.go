// Package agentver gives an agent a version and decides whether a run
// written under one version may go on under another.
//
// A version is the sha256 of what gives a run's records their meaning
// (a [Definition]): the instructions, the model spec, each tool's name,
// permission mode, argument schema and destination contract, the limits
// and the input policy, and the build (module version and VCS revision).
// Two binaries that agree on all of that share a version; any difference
// makes another one.
//
// Keel records data, not replayed code, so it can check before moving a
// run: [Check] compares the definition that wrote a run's records with the
// one about to run them, against what the run has open ([Open]: pending
// operations, pending approvals, open tool calls, queued input). A tool
// the run depends on that is gone, changed mode or contract, or whose
// recorded arguments no longer validate stops the run for a person;
// records bound by a person's decision or by an intent (an approval, a
// pending operation) also stop when the tool's schema changed at all, since
// a person approved what the arguments meant under the old schema.
// Everything else (instructions, a new tool, a looser schema for a call no
// one approved) is compatible.
//
// Definitions are kept in the artifact store ([Save], [Load]) under the
// version, so a later binary can compare against what an older one wrote.
// The package imports no cloud SDK: it is part of the kernel.
package agentver
