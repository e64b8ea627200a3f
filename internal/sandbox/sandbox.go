package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Config builds a Sandbox.
type Config struct {
	// Bwrap, Prlimit and Socat are the binaries' paths; empty looks them
	// up in PATH. Socat is needed only by policies with AllowHosts: without
	// it New succeeds and such a command is refused.
	Bwrap, Prlimit, Socat string
	// UID and GID run the commands when the worker is root (default 65534,
	// nobody): root is exempt from RLIMIT_NPROC.
	UID, GID int
	// Unsafe runs commands WITHOUT ANY ISOLATION: plain child processes
	// with the worker's files, environment, credentials and network. Only
	// wall time and output are bounded. Isolation reports it as a gap.
	Unsafe bool
	// Bare runs commands without namespaces, for a host that is itself the
	// boundary (the AWS command runner: a Lambda execution environment of
	// one run, whose role holds no data): an empty environment but PATH,
	// HOME (the workspace) and LANG, the rlimits through Prlimit, wall time
	// and output as ever, and the uid switch when the host runs as root.
	// A policy with AllowHosts is refused (there is no namespace to hold
	// the proxy). See bare.go.
	Bare bool
	// PrlimitArgs go between Prlimit and its limit flags: a binary that
	// applies prlimit(1)'s --cpu, --as, --nproc and --fsize itself (the
	// command runner re-executes itself) names its subcommand here.
	PrlimitArgs []string
}

// Sandbox runs commands; it is safe for concurrent use.
type Sandbox struct {
	cfg                   Config
	bwrap, prlimit, socat string // socat "": AllowHosts is refused
	asUser                bool   // worker is root: run bwrap as cfg.UID
}

// New checks that isolation works here by running a probe command under
// bwrap with every namespace unshared, and returns ErrNoIsolation (with
// bwrap's own message) when it does not. With cfg.Unsafe it probes nothing.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if cfg.UID == 0 {
		cfg.UID = 65534
	}
	if cfg.GID == 0 {
		cfg.GID = 65534
	}
	s := &Sandbox{cfg: cfg, asUser: os.Geteuid() == 0}
	if cfg.Unsafe {
		return s, nil
	}
	var err error
	if cfg.Bare {
		if s.prlimit, err = lookPath(cfg.Prlimit, "prlimit"); err != nil {
			return nil, fmt.Errorf("%w: prlimit not found: %w", ErrSetup, err)
		}
		return s, nil
	}
	if s.bwrap, err = lookPath(cfg.Bwrap, "bwrap"); err != nil {
		return nil, fmt.Errorf("%w: bubblewrap not found (Debian: apt-get install bubblewrap): %w", ErrNoIsolation, err)
	}
	if s.prlimit, err = lookPath(cfg.Prlimit, "prlimit"); err != nil {
		return nil, fmt.Errorf("%w: prlimit (util-linux) not found: %w", ErrNoIsolation, err)
	}
	if s.socat, err = lookPath(cfg.Socat, "socat"); err != nil {
		s.socat = ""
	}
	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func lookPath(given, name string) (string, error) {
	if given != "" {
		name = given
	}
	return exec.LookPath(name)
}

func (s *Sandbox) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append(s.mounts(false), "--", s.prlimit, "--nproc=8", "--", "/usr/bin/true")
	cmd := exec.CommandContext(ctx, s.bwrap, args...)
	cmd.SysProcAttr = s.procAttr()
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: probe `bwrap --unshare-all ... true` failed (user namespaces disabled? kernel.unprivileged_userns_clone, AppArmor's restrict_unprivileged_userns): %w: %s",
			ErrNoIsolation, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

func (s *Sandbox) procAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.asUser && !s.cfg.Unsafe {
		a.Credential = &syscall.Credential{Uid: uint32(s.cfg.UID), Gid: uint32(s.cfg.GID), Groups: []uint32{}}
	}
	return a
}

// Isolation describes what a command can reach, for doctor.
type Isolation struct {
	Backend  string   // "bubblewrap" or "none"
	Isolated bool     // false: commands run with the worker's privileges
	Facts    []string // what a command sees and is bounded by
	Gaps     []string // what doctor must report
}

// Isolation reports the sandbox's isolation facts and gaps.
func (s *Sandbox) Isolation() Isolation {
	if s.cfg.Bare {
		return bareIsolation(s.asUser, s.cfg.UID)
	}
	if s.cfg.Unsafe {
		return Isolation{Backend: "none", Gaps: []string{
			"sandbox is UNSAFE: commands run as plain processes with the worker's file system, environment, credentials and network; one run can read or corrupt another's workspace",
		}}
	}
	facts := []string{
		"bubblewrap " + s.bwrap + ": user, pid, ipc, uts, cgroup, mount and network namespaces; --die-with-parent, --new-session",
		"workspace read-write at /workspace; /usr and a minimal /etc read-only; private /tmp; no other run's files, no data directory",
		"empty environment except PATH, HOME, LANG",
		"rlimits by prlimit: CPU, address space, processes, file size; wall time and output capped by the worker",
	}
	if s.asUser {
		facts = append(facts, fmt.Sprintf("worker is root: commands run as uid %d, workspace chowned to it", s.cfg.UID))
	}
	gaps := []string{}
	if s.socat == "" {
		gaps = append(gaps, "socat not found: a command whose policy has AllowHosts is refused (Debian: apt-get install socat)")
	} else {
		facts = append(facts, "AllowHosts: still a private network namespace; the only way out is the worker's HTTP proxy (CONNECT and http:// to the listed hosts, 403 otherwise), reached through socat on 127.0.0.1:3128 and HTTP(S)_PROXY")
	}
	return Isolation{Backend: "bubblewrap", Isolated: true, Facts: facts, Gaps: gaps}
}
