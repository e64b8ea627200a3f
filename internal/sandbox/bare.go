package sandbox

import (
	"context"
	"fmt"
	"os/exec"
)

// bareCommand is argv under the limiter, as a plain child process in dir
// with an environment of PATH, HOME and LANG only: nothing of the host's
// environment (on Lambda: the runtime's AWS credentials) reaches it.
func (s *Sandbox) bareCommand(ctx context.Context, dir string, argv []string, p Policy) *exec.Cmd {
	args := append(append([]string{}, s.cfg.PrlimitArgs...), limitFlags(p)...)
	cmd := exec.CommandContext(ctx, s.prlimit, append(args, argv...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8"}
	cmd.SysProcAttr = s.procAttr()
	return cmd
}

// bareIsolation is what a bare sandbox holds by itself: the rest is the
// host's to provide, and whoever reports it (the AWS command runner's
// client) adds the host's facts.
func bareIsolation(asUser bool, uid int) Isolation {
	facts := []string{
		"no namespaces: the host is the boundary",
		"empty environment except PATH, HOME (the workspace) and LANG",
		"rlimits: CPU, address space, processes, file size; wall time and output capped",
	}
	if asUser {
		facts = append(facts, fmt.Sprintf("host runs as root: commands run as uid %d, workspace chowned to it", uid))
	}
	return Isolation{Backend: "bare", Isolated: false, Facts: facts,
		Gaps: []string{"bare sandbox: commands see the host's file system, processes and network with the host's uid (unless it is root)"}}
}
