package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// execute starts cmd, waits for it within ctx and classifies how it ended.
func (s *Sandbox) execute(ctx context.Context, cmd *exec.Cmd, status *os.File, p Policy, started func()) (Result, error) {
	out := newCapture(p.MaxOutputBytes)
	cmd.Stdout, cmd.Stderr = out.writer(&out.stdout), out.writer(&out.stderr)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	out.start = start
	if err := cmd.Start(); err != nil {
		closeAll(cmd.ExtraFiles, status)
		return Result{}, fmt.Errorf("%w: start: %w", ErrSetup, err)
	}
	closeAll(cmd.ExtraFiles) // the child holds the write end
	if started != nil {
		started()
	}
	ok := make(chan bool, 1)
	go func() { ok <- readStatus(status) }()
	go func() {
		select {
		case <-out.full:
			_ = killGroup(cmd)
		case <-ctx.Done():
		}
	}()
	waitErr := cmd.Wait()
	res := out.result()
	res.Duration = time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = exitCode(ps)
		res.CPUTime = ps.UserTime() + ps.SystemTime()
	}
	if status != nil && !<-ok {
		return res, fmt.Errorf("%w: bwrap: %s", ErrSetup, strings.TrimSpace(string(res.Stderr)))
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("%w: wait: %w", ErrSetup, waitErr)
	}
	switch {
	case res.Truncated:
		res.Killed, res.Reason = true, Output
	case ctx.Err() != nil:
		res.Killed, res.Reason = true, WallTime
	default:
		res.Killed, res.Reason = classify(res, p, !s.cfg.Unsafe)
	}
	if res.Reason != "" {
		return res, &LimitError{Reason: res.Reason, Limit: p.describe(res.Reason), Killed: res.Killed}
	}
	return res, nil
}

// classify infers which rlimit stopped a command from how it ended; the
// kernel does not say, so memory and process limits are best effort.
func classify(r Result, p Policy, limited bool) (killed bool, why Reason) {
	if !limited {
		return false, ""
	}
	stderr := strings.ToLower(string(r.Stderr))
	switch sig := r.ExitCode - 128; {
	case sig == int(syscall.SIGXCPU), sig == int(syscall.SIGKILL) && r.CPUTime >= p.CPUTime:
		return true, CPU
	case sig == int(syscall.SIGXFSZ):
		return true, FileSize
	case sig == int(syscall.SIGSEGV), sig == int(syscall.SIGABRT), sig == int(syscall.SIGBUS), sig == int(syscall.SIGKILL):
		return true, Memory
	case strings.Contains(stderr, "cannot allocate memory"), strings.Contains(stderr, "out of memory"), strings.Contains(stderr, "memoryerror"):
		return false, Memory
	case strings.Contains(stderr, "fork") && (strings.Contains(stderr, "cannot") || strings.Contains(stderr, "resource temporarily unavailable")):
		return false, Processes
	}
	return false, ""
}

// readStatus reports whether bwrap started the command: it writes
// {"child-pid": n} on the status fd once the sandbox is set up.
func readStatus(f *os.File) bool {
	if f == nil {
		return true
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	ok := false
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			_, _ = io.Copy(io.Discard, f)
			return ok
		}
		if _, has := m["child-pid"]; has {
			ok = true
		}
	}
}

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func closeAll[F interface{ Close() error }](fs []F, more ...F) {
	for _, f := range append(fs, more...) {
		_ = f.Close()
	}
}
