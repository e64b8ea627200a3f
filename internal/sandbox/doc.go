// Package sandbox runs commands in a run's workspace under isolation.
//
// # The mode rule
//
// A command whose network is off can change only its workspace, and the
// workspace is restored from the run's checkpoint (package workspace), so
// re-running such a command after a crash is safe: it is recorded like any
// tool call. A command with its network open can act on the world: it must
// be declared as an effect or confirm-once and follow the operation
// protocol (intent before dispatch, reconcile after a crash), like any
// other side effect.
//
// # Isolation (bubblewrap)
//
// Each command runs under Debian's bubblewrap (bwrap) with every namespace
// unshared (user, pid, ipc, uts, cgroup, mount, and net unless allowed),
// --die-with-parent and --new-session. It sees:
//
//   - its workspace read-write at /workspace (its working directory);
//   - a read-only system: /usr (and the /bin, /lib, /lib64, /sbin links),
//     and from /etc only what programs need to start and resolve names
//     (ld.so.cache, alternatives, passwd/group, nsswitch, localtime, ssl
//     certificates, and hosts/resolv.conf when the network is allowed);
//   - a private /tmp (HOME), /proc of its own pid namespace, a minimal /dev;
//   - an empty environment except PATH, HOME and LANG.
//
// Nothing else of the host is mounted: no other run's workspace, no Keel
// data directory or database, no credentials, no worker environment.
//
// Limits are kernel rlimits set by prlimit(1) inside the sandbox, so they
// bind the command and its children but not bwrap: RLIMIT_CPU (soft limit
// sends SIGXCPU, hard limit one second later SIGKILL), RLIMIT_AS (memory:
// allocation fails, programs usually die of SIGSEGV/SIGABRT or report
// "Cannot allocate memory"), RLIMIT_NPROC (fork fails with EAGAIN; in a
// fresh user namespace the kernel counts only the sandbox's processes) and
// RLIMIT_FSIZE (one file written). Wall time is the context's deadline
// (Policy.WallTime bounds it): bwrap is killed, its pid namespace with it.
// Output beyond Policy.MaxOutputBytes is dropped, the result is marked
// Truncated and the command is killed.
//
// The kernel does not apply RLIMIT_NPROC to uid 0, so a worker running as
// root starts bwrap as an unprivileged uid (Config.UID, default 65534) and
// chowns the workspace tree to it before each command; the workspace's
// parent directories must be searchable (o+x) by that uid. A worker that is
// not root runs bwrap as itself and changes no owner.
//
// # Network
//
// Policy.AllowHosts empty: the command has its own network namespace with
// only a loopback interface — nothing outside is reachable, not even the
// host's loopback. Non-empty: the command shares the host's network. The
// host list is recorded but NOT enforced: filtering by host needs a proxy
// reachable from inside a private network namespace (a unix socket bound
// into the sandbox plus a forwarder, or pasta/slirp4netns), which this
// package does not build yet. Isolation reports this as a gap. Either way
// a command with any network allowed is an effect under the mode rule.
//
// The private namespace does not depend on how the worker reaches the
// internet: a Fargate task in a public subnet with its own public address,
// or one behind a NAT gateway, has its routes and interfaces in the
// task's namespace, which a command without network never enters. Its
// namespace has no interface but lo and no route at all, whatever the
// host's (TestNoNetworkWhateverTheRoute).
//
// # Where namespaces are missing
//
// New probes bwrap (bwrap --unshare-all ... true) and refuses with
// ErrNoIsolation when it fails. Config.Unsafe runs commands as plain child
// processes instead — the worker's file system, environment, credentials
// and network, with only wall time and output caps — and Isolation says so,
// for doctor to report as a gap. Never use it where commands are untrusted.
package sandbox
