// The demo's child processes (publication service, keel dev): how they are started, awaited and stopped.

package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

type proc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit status, once exited is closed
}

func start(bin string, args, env []string, logPath string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logf.Close(); close(p.exited) }()
	return p, nil
}

// stop ends the process group (keel dev's task children included).
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	// Signal the whole group even when the leader is gone: a task child
	// may outlive it.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

func waitFile(ctx context.Context, path string, p *proc) (string, error) {
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b)), nil
		}
		select {
		case <-p.exited:
			return "", fmt.Errorf("process exited before writing %s: %v", path, p.err)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
