package crash

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proc is a child process in a process group of its own, so that killing
// the group also kills what it started (keel dev's long-running task).
type proc struct {
	name   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for
	err    error         // its exit status, once exited is closed
}

// startProc starts bin with the suite's environment: the caller's, minus
// every KEEL_* variable (a fault point armed in the shell must not leak
// into a scenario), plus env.
func startProc(name, bin string, args, env []string, logPath string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_") {
			env = append(env, kv)
		}
	}
	return env
}

// signalGroup signals the whole group, also after the leader is gone: a
// child it started may still be alive.
func (p *proc) signalGroup(sig syscall.Signal) {
	if p != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// kill is a power cut: SIGKILL to the group, then wait.
func (p *proc) kill() {
	if p == nil {
		return
	}
	p.signalGroup(syscall.SIGKILL)
	<-p.exited
}

// stop asks the group to end (SIGTERM), then kills whatever is left.
func (p *proc) stop() {
	if p == nil {
		return
	}
	p.signalGroup(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
	p.signalGroup(syscall.SIGKILL)
	<-p.exited
}

func (p *proc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// sigkilled reports whether the process (already exited) died by SIGKILL.
func (p *proc) sigkilled() bool {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	return false
}

// exitCode is the exit code of an exited process (-1 when signalled).
func (p *proc) exitCode() int {
	if p.err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// waitFile waits for path to hold a non-empty line, written by p.
func waitFile(ctx context.Context, path string, p *proc) (string, error) {
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b)), nil
		}
		select {
		case <-p.exited:
			return "", fmt.Errorf("%w: %s exited before writing %s: %v", errExited, p.name, path, p.err)
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// errExited: a process ended before it was ready.
var errExited = errors.New("process exited")
