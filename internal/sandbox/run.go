package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Result is what a command did.
type Result struct {
	ExitCode       int // the command's; 128+n when killed by signal n
	Stdout, Stderr []byte
	Truncated      bool   // output past MaxOutputBytes was dropped
	Killed         bool   // the worker or the kernel killed it
	Reason         Reason // the limit it hit, or ""
	Duration       time.Duration
	FirstOutput    time.Duration // start → first byte of output; 0 if none
	CPUTime        time.Duration
}

// Run runs argv in the workspace at dir (a host path) under p. A non-zero
// exit is a Result, not an error; a command stopped by a bound returns its
// Result and a *LimitError (errors.Is(err, ErrLimit)); a sandbox that could
// not be set up returns ErrSetup. ctx cancelled kills the command.
func (s *Sandbox) Run(ctx context.Context, dir string, argv []string, p Policy) (Result, error) {
	return s.RunNotify(ctx, dir, argv, p, nil)
}

// RunNotify is Run calling started (when not nil) right after the command's
// process started: the crash suite's fault point for a worker killed while
// a command runs.
func (s *Sandbox) RunNotify(ctx context.Context, dir string, argv []string, p Policy, started func()) (Result, error) {
	p = p.WithDefaults()
	if len(argv) == 0 {
		return Result{}, fmt.Errorf("%w: empty command", ErrSetup)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return Result{}, fmt.Errorf("%w: workspace %s is not a directory (%v)", ErrSetup, dir, err)
	}
	if p.Network() && s.cfg.Bare {
		return Result{}, fmt.Errorf("%w: Policy.AllowHosts: a bare sandbox has no network namespace to hold the proxy; it runs commands with network off only", ErrSetup)
	}
	ctx, cancel := context.WithTimeout(ctx, p.WallTime)
	defer cancel()
	var exit *netExit
	if p.Network() && !s.cfg.Unsafe {
		if exit, err = s.openNetwork(ctx, p); err != nil {
			return Result{}, err
		}
		defer exit.Close() // the command has ended: no tunnel outlives it
	}
	cmd, status, err := s.command(ctx, dir, argv, p, exit)
	if err != nil {
		return Result{}, err
	}
	res, err := s.execute(ctx, cmd, status, p, started)
	if exit != nil && err == nil && res.ExitCode == forwarderFailed && bytes.Contains(res.Stderr, []byte(forwarderMark)) {
		return res, fmt.Errorf("%w: %s", ErrSetup, bytes.TrimSpace(res.Stderr))
	}
	return res, err
}

// command builds the exec.Cmd: bwrap around prlimit around argv (behind
// the forwarder when exit is set), or argv alone when unsafe. status is
// bwrap's --json-status-fd (nil when unsafe).
func (s *Sandbox) command(ctx context.Context, dir string, argv []string, p Policy, exit *netExit) (*exec.Cmd, *os.File, error) {
	if s.cfg.Unsafe {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.SysProcAttr = dir, s.procAttr()
		return cmd, nil, nil
	}
	if s.asUser {
		if err := s.handOver(dir); err != nil {
			return nil, nil, err
		}
	}
	if s.cfg.Bare {
		return s.bareCommand(ctx, dir, argv, p), nil, nil
	}
	args := s.mounts(p.Network())
	if exit != nil {
		args = append(args, exit.bwrapArgs(s.socat)...)
		argv = wrap(argv)
	}
	args = append(args,
		"--bind", dir, WorkspacePath, "--chdir", WorkspacePath, "--json-status-fd", "3",
		"--", s.prlimit)
	args = append(args, limitFlags(p)...)
	cmd := exec.CommandContext(ctx, s.bwrap, append(args, argv...)...)
	cmd.Env = []string{} // bwrap itself gets nothing of the worker's either
	cmd.SysProcAttr = s.procAttr()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	cmd.ExtraFiles = []*os.File{w}
	return cmd, r, nil
}

// limitFlags are prlimit(1)'s flags for p's rlimits, ending in "--".
func limitFlags(p Policy) []string {
	cpu := int64((p.CPUTime + time.Second - 1) / time.Second)
	return []string{
		"--cpu=" + strconv.FormatInt(cpu, 10) + ":" + strconv.FormatInt(cpu+1, 10),
		"--as=" + strconv.FormatInt(p.MemoryBytes, 10),
		"--nproc=" + strconv.Itoa(p.MaxProcs),
		"--fsize=" + strconv.FormatInt(p.MaxFileBytes, 10),
		"--"}
}

// handOver makes the workspace the sandbox uid's (the worker is root) and
// checks that uid can reach it.
func (s *Sandbox) handOver(dir string) error {
	if err := searchable(filepath.Dir(dir), s.cfg.UID); err != nil {
		return fmt.Errorf("%w: workspace %s: %w; keep workspaces under o+x directories", ErrSetup, dir, err)
	}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, s.cfg.UID, s.cfg.GID)
	})
	if err != nil {
		return fmt.Errorf("%w: hand the workspace to uid %d: %w", ErrSetup, s.cfg.UID, err)
	}
	return nil
}

// killGroup kills the process group: bwrap, and with it (die-with-parent,
// pid namespace) every process of the command.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
