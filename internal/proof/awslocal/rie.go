package awslocal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sandbox is one function's execution environment: aws-lambda-rie serving
// the bootstrap binary on the Lambda Runtime API, with the function's
// environment (what Lambda gives the sandbox). Lambda starts a new one
// when a sandbox is lost; Restart does that.
type Sandbox struct {
	Name string // the function's name
	URL  string // the emulator's invoke endpoint base

	rie, bootstrap string
	env            []string
	log            string
	cmd            *exec.Cmd
}

// StartSandbox starts the emulator for a function. env is the complete
// environment of the process.
func StartSandbox(ctx context.Context, rie, bootstrap, name string, env []string, logDir string) (*Sandbox, error) {
	s := &Sandbox{Name: name, rie: rie, bootstrap: bootstrap, env: env, log: filepath.Join(logDir, name+".log")}
	return s, s.start(ctx)
}

func (s *Sandbox) start(ctx context.Context) error {
	api, err := freePort()
	if err != nil {
		return err
	}
	inv, err := freePort()
	if err != nil {
		return err
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", inv)
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(s.rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", inv),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", api),
		s.bootstrap)
	s.cmd.Dir = filepath.Dir(s.bootstrap)
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("awslocal: start %s: %w", s.rie, err)
	}
	// The emulator answers GETs on its invoke port with 404 once it listens.
	if err := waitHTTP(ctx, s.URL+"/", 30*time.Second); err != nil {
		s.Kill()
		return fmt.Errorf("awslocal: %s did not listen (see %s): %w", s.Name, s.log, err)
	}
	return nil
}

// Kill SIGKILLs the sandbox: the emulator and the bootstrap it runs (one
// process group), as a lost host takes both.
func (s *Sandbox) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart replaces a killed sandbox with a new one (new ports).
func (s *Sandbox) Restart(ctx context.Context) error {
	s.Kill()
	return s.start(ctx)
}

// Pids are the processes of the sandbox: the emulator, then its children
// (the bootstrap), found by their parent in /proc.
func (s *Sandbox) Pids() []int {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	root := s.cmd.Process.Pid
	pids := []int{root}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut after ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(root) {
			pids = append(pids, pid)
		}
	}
	return pids
}
