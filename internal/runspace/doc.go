// Package runspace gives each run its workspace on a worker: a directory
// tree restored from the run's latest checkpoint before its tools run,
// versioned (package workspace) with every checkpoint after they ran, and
// the sandbox (package sandbox) its commands run in.
//
// # The tree on a worker is a cache
//
// What a run's files are is the version its latest checkpoint names, kept
// in the artifact store. The directory on a worker is only a copy, trusted
// when — and only when — a marker beside it names the version the harness
// asks for. The marker is removed before any tool may change the tree
// (Touch) and written again when the tree is snapshotted or restored, so a
// worker that died while a tool ran leaves no marker, and the next Open
// restores the tree from the store, verifying every blob. Any worker, a
// fresh keel dev after a crash, a Lambda step or the Fargate task, finds
// the same tree.
//
// # Where the trees live
//
// Under Config.Root, one directory per run, 0700. The sandbox runs commands
// as an unprivileged uid when the worker is root, and that uid must be able
// to reach the run's directory: Root is therefore made 0711 (others may
// traverse it, not list it), and it should not sit under the data directory
// (0700) or a home directory. keel dev uses a directory under the system's
// temporary directory, named after the data directory.
package runspace
