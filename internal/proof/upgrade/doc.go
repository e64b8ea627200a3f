// Package upgrade proves Keel's deploy story across real builds: one
// agent program (testdata/prog) is built in several versions from this
// module (go build -ldflags "-X main.variant=..."), a run is started under
// keel dev of the first, the process is killed with SIGKILL, and keel dev
// of the second takes the same data directory. The tests check what the
// version check (package agentver, the harness's version.go) promises: an
// approval given for v1's arguments is never applied under a changed
// schema or a removed tool, a compatible change moves the run with
// agent_upgraded, and an operation left pending under v1 is reconciled
// under v1's contract. Before the second process starts, its
// upgrade-check command previews each run; the tests hold it to what
// then happens. While the first still serves, the second's upgrade-check
// --api asks its API, and must print the very same preview.
//
// The package has no code of its own beyond tests.
package upgrade
