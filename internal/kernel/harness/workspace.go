package harness

// A run's workspace: opened on this worker before its first tool call of a
// Step, versioned with each checkpoint written after a tool may have changed
// it. The version a checkpoint names is what any worker restores; the copy
// on this worker is only trusted as that version (internal/runspace).

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/workspace"
)

// WorkspaceError is a tree that cannot be versioned: the run ends failed
// with it, since retrying stores the same tree.
type WorkspaceError struct{ Err error }

func (e *WorkspaceError) Error() string { return "workspace: " + e.Err.Error() }
func (e *WorkspaceError) Unwrap() error { return e.Err }

// runWorkspace is the run's workspace on this worker during a Step:
// opened on first use, and in use from bind until done.
type runWorkspace struct {
	open   Workspaces // nil: the agent's tools have none
	runID  string
	faults FaultPoints
	tree   Workspace // once a tool of this Step needed it
	inUse  bool      // a tool has the tree and may change it until done
}

// bind returns ctx carrying the run's workspace, opened as of version (the
// cursor's) on first use in this Step, and touched: the tool about to run
// may change it. The tree stays in use until done: a commit between this
// call and the tool's code (the read-only group's reservation flush, an
// effect's intent) snapshots the tree as it is then, and the tree must
// stay touched so the checkpoint after the tool snapshots it again.
func (w *runWorkspace) bind(ctx context.Context, version string) (context.Context, error) {
	if w.open == nil {
		return ctx, nil
	}
	if w.tree == nil {
		ws, err := w.open(ctx, w.runID, version)
		if err != nil {
			if treeFault(err) {
				return nil, &WorkspaceError{Err: err}
			}
			return nil, &RetryableError{Err: fmt.Errorf("open workspace: %w", err)}
		}
		w.tree = ws
	}
	if err := w.tree.Touch(); err != nil {
		return nil, &RetryableError{Err: err}
	}
	w.inUse = true
	return w.tree.Bind(ctx), nil
}

// done ends the use bind began: the tools given the tree have returned.
func (w *runWorkspace) done() { w.inUse = false }

// version is the version the next checkpoint names: a new one when a tool
// may have changed the tree since the last checkpoint, else last.
func (w *runWorkspace) version(ctx context.Context, last string) (string, error) {
	if w.tree == nil || !w.tree.Touched() {
		return last, nil
	}
	v, err := w.tree.Snapshot(ctx)
	if err != nil {
		if treeFault(err) {
			return "", &WorkspaceError{Err: err}
		}
		return "", &RetryableError{Err: fmt.Errorf("snapshot workspace: %w", err)}
	}
	w.faults.Hit(FaultInWorkspaceSnapshot)
	if w.inUse {
		// A tool holding the tree has not run yet or not returned.
		if err := w.tree.Touch(); err != nil {
			return "", &RetryableError{Err: err}
		}
	}
	return v, nil
}

func treeFault(err error) bool {
	return errors.Is(err, workspace.ErrTooLarge) || errors.Is(err, workspace.ErrPathEscapes) ||
		errors.Is(err, workspace.ErrUnsupported) || errors.Is(err, workspace.ErrBlob) || errors.Is(err, workspace.ErrBadManifest)
}
