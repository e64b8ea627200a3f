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
	done           chan struct{} // closed once cmd has been waited for
}

// StartSandbox starts the emulator for a function. env is the complete
// environment of the process.
func StartSandbox(ctx context.Context, rie, bootstrap, name string, env []string, logDir string) (*Sandbox, error) {
	s := &Sandbox{Name: name, rie: rie, bootstrap: bootstrap, env: env, log: filepath.Join(logDir, name+".log")}
	return s, s.start(ctx)
}

// startAttempts bounds how often a sandbox is started on fresh ports: a
// port freePort found free may be taken again before the emulator binds
// it (freePort closes its listener, and every outgoing connection on this
// host draws from the same range), and the emulator then exits at once.
const startAttempts = 5

func (s *Sandbox) start(ctx context.Context) error {
	var err error
	for range startAttempts {
		var exited bool
		if exited, err = s.startOnce(ctx); err == nil || !exited {
			return err
		}
	}
	return err
}

// startOnce starts the emulator on two fresh ports and waits until it
// listens; exited says it died first (a lost port race, worth another
// try) rather than never answering.
func (s *Sandbox) startOnce(ctx context.Context) (exited bool, err error) {
	api, err := freePort()
	if err != nil {
		return false, err
	}
	inv, err := freePort()
	if err != nil {
		return false, err
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", inv)
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return false, err
	}
	defer logf.Close()
	cmd := exec.Command(s.rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", inv),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", api),
		s.bootstrap)
	cmd.Dir = filepath.Dir(s.bootstrap)
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("awslocal: start %s: %w", s.rie, err)
	}
	// The emulator answers GETs on its invoke port with 404 once it
	// listens; waiting ends early when it exits instead.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() { _ = cmd.Wait(); close(done); cancel() }()
	werr := waitHTTP(wctx, s.URL+"/", 30*time.Second)
	select {
	case <-done:
		s.Kill()
		return true, fmt.Errorf("awslocal: %s exited before it listened on ports %d and %d (see %s)", s.Name, inv, api, s.log)
	default:
	}
	if werr != nil {
		s.Kill()
		return false, fmt.Errorf("awslocal: %s did not listen (see %s): %w", s.Name, s.log, werr)
	}
	return false, nil
}

// LogTail is the last n lines of what the emulator and the function
// printed, for a failed scenario's report.
func (s *Sandbox) LogTail(n int) string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Kill SIGKILLs the sandbox: the emulator and the bootstrap it runs (one
// process group), as a lost host takes both.
func (s *Sandbox) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
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
