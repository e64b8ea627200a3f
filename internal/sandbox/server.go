package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// ServerCommand builds the command of a long-lived server the worker
// talks to over stdin and stdout (an MCP server over stdio): under bwrap,
// as a command runs, with a read-only system, a private /tmp as its home,
// the run's workspace at /workspace as its working directory (when
// workspace is a directory; else /tmp), no other file of this machine but
// the program's own directory (read-only), no environment but PATH, HOME,
// LANG and env,
// and — unless network — no network at all. With network it shares the
// worker's network namespace: its files, environment and credentials
// stay out of reach, but where it connects is not filtered (the allow-list
// proxy of commands holds per command, not for a process that lives as
// long as the worker). No rlimits and no wall time: the server lives as
// long as its connection.
//
// An unsafe or bare sandbox has no namespaces: the server is then a plain
// child process with only PATH, HOME, LANG and env, and Isolated says so.
// The caller starts, waits for and kills the command.
func (s *Sandbox) ServerCommand(argv, env []string, network bool, workspace string) (*exec.Cmd, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: a server needs a program")
	}
	prog := argv[0]
	if !filepath.IsAbs(prog) {
		p, err := exec.LookPath(prog)
		if err != nil {
			return nil, fmt.Errorf("sandbox: server program %q: %w", prog, err)
		}
		prog = p
	}
	for _, kv := range env {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("sandbox: server environment %q: want NAME=value", kv)
		}
	}
	if s.cfg.Unsafe || s.cfg.Bare {
		cmd := exec.Command(prog, argv[1:]...)
		cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Dir(prog), "LANG=C.UTF-8"}, env...)
		cmd.Dir = workspace
		cmd.SysProcAttr = s.procAttr()
		return cmd, nil
	}
	if workspace != "" && s.asUser {
		if err := s.handOver(workspace); err != nil {
			return nil, err
		}
	}
	args := s.mounts(network)
	if network {
		args = append(args, "--share-net")
	}
	if dir := filepath.Dir(prog); !underSystem(dir) {
		args = append(args, "--ro-bind", dir, dir)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	if workspace != "" {
		args = append(args, "--bind", workspace, WorkspacePath, "--chdir", WorkspacePath)
	} else {
		args = append(args, "--chdir", "/tmp")
	}
	args = append(args, "--", prog)
	cmd := exec.Command(s.bwrap, append(args, argv[1:]...)...)
	cmd.Env = []string{} // bwrap itself gets nothing of the worker's either
	cmd.SysProcAttr = s.procAttr()
	return cmd, nil
}

// underSystem: dir is inside what every sandbox sees already (/usr, and
// the links to it).
func underSystem(dir string) bool {
	for _, p := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"} {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}
