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
// unshared (user, pid, ipc, uts, cgroup, mount and net, always),
// --die-with-parent and --new-session. It sees:
//
//   - its workspace read-write at /workspace (its working directory);
//   - a read-only system: /usr (and the /bin, /lib, /lib64, /sbin links),
//     and from /etc only what programs need to start and resolve names
//     (ld.so.cache, alternatives, passwd/group, nsswitch, localtime, ssl
//     certificates, and hosts/resolv.conf when AllowHosts is set);
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
// Every command has its own network namespace with only a loopback
// interface and no route: nothing outside is reachable, not even the
// host's loopback. Policy.AllowHosts empty leaves it so. Non-empty gives
// the command one way out, an HTTP proxy run by the worker for that
// command alone (proxy.go): it listens on a Unix socket in a private
// directory, bound read-only at /run/keel/proxy; inside, socat relays
// 127.0.0.1:3128 to it, and HTTP_PROXY, HTTPS_PROXY, http_proxy and
// https_proxy point there (the command starts once socat listens). The
// proxy serves CONNECT (https and any TLS) and absolute-URI http:// only
// to the listed hosts — "api.example.com", "*.example.com" (names below
// it), either with ":port" to allow only that port — and answers 403
// with a body naming the host otherwise. It checks the host of the
// request line (the CONNECT authority or the URI), never a Host header
// that may disagree, and compares names without resolving them. The
// worker then resolves an allowed name itself and dials the address it
// checked (dest.go): an address of the worker's own host or link —
// loopback, link-local (the cloud's instance metadata at 169.254.169.254,
// the container credential endpoint at 169.254.170.2), fd00:ec2::254,
// unspecified, multicast — is refused with 403 unless the list names that
// address itself ("127.0.0.1:8080") or "localhost" for loopback, so an
// allowed name whose DNS answers 127.0.0.1 or 169.254.170.2 reaches
// neither the worker's services nor its credentials. Programs that ignore the proxy
// variables, and DNS, UDP or raw TCP, have no way out. The proxy and its
// tunnels close when the command ends. socat is needed only then: without
// it New succeeds, such a command is refused with ErrSetup naming socat,
// and Isolation reports the gap. Either way a command with any network
// allowed is an effect under the mode rule.
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
