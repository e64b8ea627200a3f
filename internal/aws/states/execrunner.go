package states

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
)

// ExecTaskRunner runs ecs:runTask locally as a child process: Command with
// Args, in the environment Env (os.Environ() when nil) plus the
// Environment of every container override, the way ECS sets a container's
// environment. The child is not tied to the RunTask context: like a
// Fargate task it outlives the call that started it and reports back
// through the task token. Wait waits for every child started.
//
// A child does not outlive this process: it is killed (SIGKILL, Linux's
// parent-death signal) when the process dies, however it dies. A task
// left running by a dead keel dev would keep stepping its run beside the
// next one, holding its lease until its heartbeat ran out; instead it
// dies, and the next process's executor takes its wait as lost at once
// (ProcessBoundTasks). Killing it mid-step is a crash like any other: the
// harness reconciles the run's operations before it goes on.
type ExecTaskRunner struct {
	Command string
	Args    []string
	Env     []string
	Stdout  io.Writer
	Stderr  io.Writer
	Logger  *slog.Logger

	wg sync.WaitGroup
}

var _ ProcessBoundTasks = (*ExecTaskRunner)(nil)

// TasksDieWithProcess is true on Linux: see ExecTaskRunner.
func (r *ExecTaskRunner) TasksDieWithProcess() bool { return childrenDie }

// runTaskParams is the part of ecs:runTask's parameters a local run uses.
type runTaskParams struct {
	Overrides struct {
		ContainerOverrides []struct {
			Name        string
			Environment []struct {
				Name  string
				Value string
			}
		}
	}
}

// RunTask starts the child process and returns once it is running.
func (r *ExecTaskRunner) RunTask(ctx context.Context, params json.RawMessage) error {
	var p runTaskParams
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("states: runTask parameters: %w", err)
	}
	env := r.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	for _, c := range p.Overrides.ContainerOverrides {
		for _, kv := range c.Environment {
			env = append(env, kv.Name+"="+kv.Value)
		}
	}
	cmd := exec.Command(r.Command, r.Args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = r.Stdout, r.Stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("states: start %s: %w", r.Command, err)
	}
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// The environment holds the task token: log the pid, never env.
		if err := cmd.Wait(); err != nil {
			log.Warn("states: local task exited", "pid", cmd.Process.Pid, "err", err)
		}
	}()
	return nil
}

// Wait blocks until every child process started so far has exited.
func (r *ExecTaskRunner) Wait() { r.wg.Wait() }
