package keel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/keelrun/keel/internal/agentdef"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/runspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// WorkspaceConfig gives every run of an agent a workspace: a directory tree
// that is part of the run's durable state, like its transcript. Each
// checkpoint written after a tool ran records the tree's version (a
// manifest of path, content hash, mode and size, kept in the artifact
// store with the content, under the run's prefix, so a checkpoint that
// changed one file stores that file and a manifest). Any worker restores
// the tree of the run's latest checkpoint, byte for byte and verified,
// before the run's next tool call; a fork starts from its parent's tree at
// the fork's checkpoint and never shares writes with it.
//
// Zero limits take the defaults: 1 GiB in all, 100,000 entries, 256 MiB a
// file. A tree over a limit when a checkpoint is taken ends the run failed,
// naming the limit; nothing recorded before is lost.
type WorkspaceConfig struct {
	MaxBytes     int64
	MaxFiles     int
	MaxFileBytes int64
	// Commands, when set, lets the agent's tools run commands in the tree
	// ([Workspace.Run], [Command]) under this policy; nil: none.
	Commands *CommandPolicy
}

// CommandPolicy bounds each command an agent runs in its workspace. A
// command sees its workspace read-write at /workspace, a read-only system,
// no other run's files, no Keel data, no environment of the worker and no
// network but the hosts of AllowHosts (Linux namespaces through bubblewrap;
// a worker without them refuses to start unless KEEL_SANDBOX=unsafe).
//
// The mode rule: a command without network can change only its workspace,
// which is restored from the checkpoint, so running it again after a crash
// is safe and [Command] is a read-only tool. A command with network can act
// on the world: only an [Effect] may run one (its Dispatch calls
// [Workspace.Run]), under the operation protocol.
//
// Zero fields take the defaults: 5 minutes of CPU, 2 GiB of memory, 256
// processes, 256 MiB a written file, 10 minutes of wall time, 1 MiB of
// output.
type CommandPolicy struct {
	// AllowHosts, when not empty, lets a command reach these hosts and
	// no others: "api.example.com", "*.example.com" (names below it),
	// either with an optional ":port". The command keeps its own network
	// namespace; its only way out is an HTTP proxy run by the worker
	// (HTTP_PROXY and HTTPS_PROXY are set; CONNECT for https), which
	// answers 403 for any other host. A name that resolves to loopback
	// or link-local (metadata and credential endpoints) is refused too,
	// unless that address itself (or "localhost") is listed. Needs socat
	// on the worker.
	AllowHosts     []string
	CPUTime        time.Duration
	MemoryBytes    int64
	MaxProcs       int
	MaxFileBytes   int64
	WallTime       time.Duration
	MaxOutputBytes int64
}

func (p *CommandPolicy) sandbox() sandbox.Policy {
	return sandbox.Policy{AllowHosts: p.AllowHosts, CPUTime: p.CPUTime, MemoryBytes: p.MemoryBytes, MaxProcs: p.MaxProcs,
		MaxFileBytes: p.MaxFileBytes, WallTime: p.WallTime, MaxOutputBytes: p.MaxOutputBytes}
}

// Errors of the workspace API.
var (
	// ErrNoWorkspace: the context is not a tool call of an agent with a
	// [WorkspaceConfig].
	ErrNoWorkspace = errors.New("keel: no workspace in this context (not a tool call of an agent with a Workspace)")
	// ErrPathEscapes: a path, or a symlink on it, leads out of the workspace.
	ErrPathEscapes = workspace.ErrPathEscapes
	// ErrCommandLimit: a command was stopped by a bound of its policy.
	ErrCommandLimit = sandbox.ErrLimit
	// ErrNetworkNeedsEffect: a command with network was started outside
	// an [Effect]'s Dispatch.
	ErrNetworkNeedsEffect = errors.New("keel: a command with network can act on the world: run it from an Effect's Dispatch")
)

// Workspace is the run's tree, as a tool call sees it. Every name is a
// slash-separated path relative to the tree's top; "..", absolute paths and
// symlinks leading out are refused with [ErrPathEscapes].
type Workspace struct {
	t    *runspace.Tree
	call agentdef.Call
}

// RunWorkspace returns the workspace of the run ctx's tool call belongs to.
func RunWorkspace(ctx context.Context) (*Workspace, error) {
	t, ok := runspace.From(ctx)
	if !ok {
		return nil, ErrNoWorkspace
	}
	c, _ := agentdef.CallFrom(ctx)
	return &Workspace{t: t, call: c}, nil
}

// Path is the tree's directory on this worker, for Go code that needs a
// path (a command sees the tree at /workspace instead). It changes from
// worker to worker: never record it.
func (w *Workspace) Path() string { return w.t.Dir() }

// Version is the version the tree was restored at or last recorded as
// ("sha256:{manifest hash}@{run}"); files changed since are not in it.
func (w *Workspace) Version() string { return w.t.Version() }

// ReadFile returns the content of the file at name.
func (w *Workspace) ReadFile(name string) ([]byte, error) {
	d, err := w.t.Files()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Read(name)
}

// WriteFile creates or replaces the file at name (and its parent
// directories) with data and mode perm.
func (w *Workspace) WriteFile(name string, data []byte, perm fs.FileMode) error {
	d, err := w.t.Files()
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Write(name, data, perm)
}

// Remove deletes the file, symlink or directory tree at name.
func (w *Workspace) Remove(name string) error {
	d, err := w.t.Files()
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Remove(name)
}

// FileInfo describes one entry of [Workspace.List].
type FileInfo struct {
	Path string      `json:"path"`
	Dir  bool        `json:"dir,omitempty"`
	Mode fs.FileMode `json:"mode"`
	Size int64       `json:"size"`
}

// List returns the entries directly under dir ("" for the top), sorted by
// path.
func (w *Workspace) List(dir string) ([]FileInfo, error) {
	d, err := w.t.Files()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	infos, err := d.List(dir)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, len(infos))
	for i, in := range infos {
		out[i] = FileInfo{Path: in.Path, Dir: in.Type == workspace.TypeDir, Mode: in.Mode, Size: in.Size}
	}
	return out, nil
}

// CommandResult is what a command did. A non-zero exit is a result, not an
// error.
type CommandResult struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated,omitempty"`
	// Limit names the bound that stopped the command, if one did.
	Limit string `json:"limit,omitempty"`
}

// Run runs argv in the workspace under the agent's [CommandPolicy]. A
// command stopped by a bound returns its result and an error wrapping
// [ErrCommandLimit]; a command with network outside an [Effect] returns
// [ErrNetworkNeedsEffect] and does not start.
func (w *Workspace) Run(ctx context.Context, argv ...string) (CommandResult, error) {
	if len(argv) == 0 {
		return CommandResult{}, errors.New("run: empty command")
	}
	if w.t.Policy().Network() && w.call.OperationID == "" {
		return CommandResult{}, ErrNetworkNeedsEffect
	}
	res, err := w.t.Exec(ctx, argv)
	out := CommandResult{ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr), Truncated: res.Truncated}
	var le *sandbox.LimitError
	if errors.As(err, &le) {
		out.Limit = le.Error()
	}
	if err != nil {
		return out, fmt.Errorf("run %q: %w", argv[0], err)
	}
	return out, nil
}

// CommandArgs are the arguments of a [Command] tool's calls.
type CommandArgs struct {
	Argv []string `json:"argv" jsonschema:"description=the program and its arguments; the working directory is the workspace (/workspace),minItems=1"`
}

// Command is a built-in read-only tool that runs the model's command in the
// run's workspace under the agent's [CommandPolicy], which must keep the
// network off (see the mode rule there; Main refuses otherwise). The model
// gets the exit code, the output and the limit hit, if any; a command
// stopped by a limit is a failed call the run survives.
func Command(name, description string) Tool {
	t := ReadOnly(name, description, func(ctx context.Context, a CommandArgs) (CommandResult, error) {
		w, err := RunWorkspace(ctx)
		if err != nil {
			return CommandResult{}, err
		}
		res, err := w.Run(ctx, a.Argv...)
		if err != nil && res.Limit != "" {
			return CommandResult{}, fmt.Errorf("%s (stdout so far: %q)", res.Limit, clipOut(res.Stdout))
		}
		return res, err
	})
	t.command = true
	return t
}

func clipOut(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// check refuses limits no tree or command could honour.
func (c *WorkspaceConfig) check() error {
	if c == nil {
		return nil
	}
	if c.MaxBytes < 0 || c.MaxFiles < 0 || c.MaxFileBytes < 0 {
		return errors.New("Workspace limits must not be negative")
	}
	if p := c.Commands; p != nil && (p.CPUTime < 0 || p.MemoryBytes < 0 || p.MaxProcs < 0 || p.MaxFileBytes < 0 || p.WallTime < 0 || p.MaxOutputBytes < 0) {
		return errors.New("Workspace.Commands bounds must not be negative")
	}
	if p := c.Commands; p != nil {
		if err := sandbox.CheckAllowHosts(p.AllowHosts); err != nil {
			return fmt.Errorf("Workspace.Commands.AllowHosts: %w", err)
		}
	}
	return nil
}

// checkCommandTool refuses a Command tool the agent cannot run safely.
func checkCommandTool(a Agent, t Tool) error {
	switch {
	case !t.command:
		return nil
	case a.Workspace == nil || a.Workspace.Commands == nil:
		return fmt.Errorf("tool %q runs commands: set Workspace.Commands", t.name)
	case len(a.Workspace.Commands.AllowHosts) > 0:
		return fmt.Errorf("tool %q is read-only, but Workspace.Commands.AllowHosts opens the network: a command that can act on the world must run from an Effect", t.name)
	}
	return nil
}

func (c *WorkspaceConfig) def() *compose.WorkspaceDef {
	if c == nil {
		return nil
	}
	d := &compose.WorkspaceDef{Limits: workspace.Limits{MaxTotalBytes: c.MaxBytes, MaxFiles: c.MaxFiles, MaxFileBytes: c.MaxFileBytes}}
	if c.Commands != nil {
		d.Commands, d.Policy = true, c.Commands.sandbox()
	}
	return d
}
