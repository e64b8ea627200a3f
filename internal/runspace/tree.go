package runspace

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// Tree is one run's workspace on this worker.
type Tree struct {
	m       *Manager
	run     string
	dir     string
	marker  string
	version string // what the tree was at Open or the last Snapshot
	touched bool   // a tool may have changed it since
}

// Dir is the tree's host path.
func (t *Tree) Dir() string { return t.dir }

// RunID is the run the tree belongs to.
func (t *Tree) RunID() string { return t.run }

// Version is the version the tree was opened at or last snapshotted to.
func (t *Tree) Version() string { return t.version }

// restore makes the directory exactly t.version and writes the marker.
func (t *Tree) restore(ctx context.Context) error {
	if err := os.Remove(t.marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("runspace: %w", err)
	}
	if t.version == "" {
		if err := os.RemoveAll(t.dir); err != nil {
			return fmt.Errorf("runspace: clear %s: %w", t.dir, err)
		}
		if err := os.Mkdir(t.dir, 0o700); err != nil {
			return fmt.Errorf("runspace: %w", err)
		}
	} else {
		v, err := workspace.ParseVersion(t.version)
		if err != nil {
			return fmt.Errorf("runspace: run %s: %w", t.run, err)
		}
		mf, err := t.m.ver.Restore(ctx, v, t.dir)
		if err != nil {
			return fmt.Errorf("runspace: restore the workspace of run %s at %s: %w", t.run, t.version, err)
		}
		t.m.remember(t.version, mf)
	}
	return t.writeMarker()
}

func (t *Tree) writeMarker() error {
	if err := os.WriteFile(t.marker, []byte(markerOf(t.version)), 0o600); err != nil {
		return fmt.Errorf("runspace: %w", err)
	}
	return nil
}

// Touch is called before a tool may change the tree: from then until the
// next Snapshot, the copy here is no recorded version, and a worker that
// finds it so restores it.
func (t *Tree) Touch() error {
	if t.touched {
		return nil
	}
	if err := os.Remove(t.marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("runspace: %w", err)
	}
	t.touched = true
	return nil
}

// Touched reports whether a tool may have changed the tree since it was
// opened or snapshotted.
func (t *Tree) Touched() bool { return t.touched }

// Snapshot stores the tree (new content and a manifest under the run's
// prefix) and returns its version. A tree over its limits, with a path
// leaving it or a file type that cannot be stored, is an error wrapping
// workspace.ErrTooLarge, ErrPathEscapes or ErrUnsupported; the tree is left
// as it is.
func (t *Tree) Snapshot(ctx context.Context) (string, error) {
	prev, err := t.m.manifest(ctx, t.version)
	if err != nil {
		return "", fmt.Errorf("runspace: previous version of run %s: %w", t.run, err)
	}
	snap, err := t.m.ver.Snapshot(ctx, t.run, t.dir, prev)
	if err != nil {
		return "", fmt.Errorf("runspace: snapshot the workspace of run %s: %w", t.run, err)
	}
	t.version, t.touched = snap.Version.String(), false
	t.m.remember(t.version, snap.Manifest)
	return t.version, t.writeMarker()
}

// Files opens the tree for reading and writing by relative paths (see
// workspace.Dir); the caller closes it.
func (t *Tree) Files() (*workspace.Dir, error) {
	return workspace.OpenDir(t.dir, t.m.cfg.Limits)
}

// Exec runs argv in the tree under the agent's sandbox policy.
func (t *Tree) Exec(ctx context.Context, argv []string) (sandbox.Result, error) {
	if t.m.cfg.Sandbox == nil && t.m.cfg.Remote != nil {
		return t.execRemote(ctx, argv)
	}
	if t.m.cfg.Sandbox == nil {
		return sandbox.Result{}, ErrNoSandbox
	}
	if err := t.Touch(); err != nil {
		return sandbox.Result{}, err
	}
	return t.m.cfg.Sandbox.RunNotify(ctx, t.dir, argv, t.m.cfg.Policy, t.m.cfg.Started)
}

// Policy is the bound of the tree's commands.
func (t *Tree) Policy() sandbox.Policy { return t.m.cfg.Policy }

type treeKey struct{}

// Bind returns ctx carrying t for the tool code of the call.
func (t *Tree) Bind(ctx context.Context) context.Context {
	return context.WithValue(ctx, treeKey{}, t)
}

// From returns the tree ctx carries.
func From(ctx context.Context) (*Tree, bool) {
	t, ok := ctx.Value(treeKey{}).(*Tree)
	return t, ok
}
