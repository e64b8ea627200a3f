// Package agent is the coder agent: it writes a small shell project in its
// run's workspace, runs the project's tests and packs a release tarball in
// the sandbox (network off, so a crash re-runs the command on the
// workspace restored from the checkpoint), hashes the tarball, and ships it
// to a destination directory through an Effect whose approval binds the
// tarball's sha256 and the workspace version that produced it.
package agent
