package compose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/runspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// workspaces builds the agents' workspace managers, sharing one sandbox
// (made, and its isolation probed, only when an agent runs commands).
type workspaces struct {
	cfg  config.Config
	arts artifact.Store
	log  *slog.Logger
	sb   *sandbox.Sandbox
	// faults: the in_command point is hit as each command starts.
	faults harness.FaultPoints
	// runner builds the client of KEEL_COMMAND_RUNNER (AWS backends only).
	runner func(function, bucket string) (runspace.Remote, error)
	remote runspace.Remote
}

// open returns the harness's opener of def's runs' workspaces.
func (w *workspaces) open(ctx context.Context, def AgentDef) (harness.Workspaces, error) {
	if w.arts == nil {
		return nil, errors.New("a workspace needs an artifact store (KEEL_ARTIFACTS)")
	}
	rc := runspace.Config{Root: WorkspaceRoot(w.cfg), Artifacts: w.arts, Limits: def.Workspace.Limits, Policy: def.Workspace.Policy}
	if w.faults != nil {
		rc.Started = func() { w.faults.Hit(harness.FaultInCommand) }
	}
	switch {
	case def.Workspace.Commands && w.cfg.CommandRunner != "":
		r, err := w.commandRunner()
		if err != nil {
			return nil, err
		}
		rc.Remote = r
	case def.Workspace.Commands:
		sb, err := w.sandbox(ctx)
		if err != nil {
			return nil, err
		}
		rc.Sandbox = sb
	}
	m, err := runspace.New(rc)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, runID, version string) (harness.Workspace, error) {
		t, err := m.Open(ctx, runID, version)
		if err != nil {
			return nil, err
		}
		return t, nil
	}, nil
}

// toolEnv is what def's tools are built with: the artifact store, and
// the sandbox for stdio servers when def runs commands on this worker
// (with KEEL_COMMAND_RUNNER its commands run elsewhere, and a server that
// asks for a sandbox is refused when it starts).
func (w *workspaces) toolEnv(ctx context.Context, def AgentDef) (ToolEnv, error) {
	env := ToolEnv{Artifacts: w.arts}
	if def.Workspace == nil || !def.Workspace.Commands || w.cfg.CommandRunner != "" {
		return env, nil
	}
	sb, err := w.sandbox(ctx)
	if err != nil {
		return env, err
	}
	env.ServerSandbox = sb.ServerCommand
	return env, nil
}

// commandRunner is the client of the command runner function: on AWS the
// agents' commands run there, never beside this worker's credentials.
func (w *workspaces) commandRunner() (runspace.Remote, error) {
	if w.remote != nil {
		return w.remote, nil
	}
	bucket, ok := strings.CutPrefix(w.cfg.ArtifactsURL(), "s3:")
	if !ok || w.runner == nil {
		return nil, fmt.Errorf("KEEL_COMMAND_RUNNER %q: the command runner reads and writes workspaces through S3 presigned URLs: it needs the artifacts on S3 (KEEL_BUCKET), got %q", w.cfg.CommandRunner, w.cfg.ArtifactsURL())
	}
	r, err := w.runner(w.cfg.CommandRunner, bucket)
	if err != nil {
		return nil, fmt.Errorf("KEEL_COMMAND_RUNNER: %w", err)
	}
	w.remote = r
	return r, nil
}

func (w *workspaces) sandbox(ctx context.Context) (*sandbox.Sandbox, error) {
	if w.sb != nil {
		return w.sb, nil
	}
	unsafe := w.cfg.Sandbox == config.SandboxUnsafe
	sb, err := sandbox.New(ctx, sandbox.Config{Unsafe: unsafe})
	if err != nil {
		return nil, fmt.Errorf("KEEL_SANDBOX: %w (set KEEL_SANDBOX=unsafe to run commands WITHOUT isolation, with this worker's files, environment and credentials)", err)
	}
	if unsafe {
		w.log.Warn("KEEL_SANDBOX=unsafe: agents' commands run WITHOUT isolation, with this worker's files, environment and credentials")
	}
	w.sb = sb
	return sb, nil
}

// WorkspaceRoot is where this worker keeps its copies of runs' workspaces:
// KEEL_WORKSPACE_ROOT, else a directory of the system's temporary
// directory named after the store, so two stores never share one.
func WorkspaceRoot(cfg config.Config) string {
	if cfg.WorkspaceRoot != "" {
		return cfg.WorkspaceRoot
	}
	sum := sha256.Sum256([]byte(cfg.StoreURL()))
	return filepath.Join(os.TempDir(), "keel-workspaces-"+hex.EncodeToString(sum[:6]))
}
