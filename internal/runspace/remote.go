package runspace

import (
	"crypto/sha256"
	"encoding/hex"
	"os"

	"context"
	"errors"
	"fmt"
	"github.com/keelrun/keel/internal/kernel/artifact"

	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// Remote runs a command of a run's tree away from this worker: it gets
// the tree as a stored version and answers with the version the command
// left, already stored (manifest and blobs under the run's prefix).
type Remote interface {
	// Exec runs c. A command stopped by a limit returns its result, the
	// version it left and an error wrapping sandbox.ErrLimit; any other
	// error means no new version.
	Exec(ctx context.Context, c RemoteCommand) (RemoteResult, error)
	// Isolation is what the command can reach, for doctor.
	Isolation() sandbox.Isolation
}

// RemoteCommand is one command of a tree stored at Version.
type RemoteCommand struct {
	RunID    string
	Version  string              // "" is the empty tree
	Manifest *workspace.Manifest // Version's; nil for ""
	Argv     []string
	Policy   sandbox.Policy
	Limits   workspace.Limits
}

// RemoteResult is the command's result and the tree it left.
type RemoteResult struct {
	Result   sandbox.Result
	Version  string
	Manifest *workspace.Manifest
}

// execRemote stores the tree as it is (tools may have written files since
// the last checkpoint), has the command run on it elsewhere, and brings
// the version it left here, verified, so the next checkpoint records it as
// a local command's would be. The tree stays touched.
func (t *Tree) execRemote(ctx context.Context, argv []string) (sandbox.Result, error) {
	before, err := t.Snapshot(ctx)
	if err != nil {
		return sandbox.Result{}, err
	}
	if err := t.Touch(); err != nil {
		return sandbox.Result{}, err
	}
	mf, err := t.m.manifest(ctx, before)
	if err != nil {
		return sandbox.Result{}, err
	}
	rr, err := t.m.cfg.Remote.Exec(ctx, RemoteCommand{RunID: t.run, Version: before, Manifest: mf, Argv: argv, Policy: t.m.cfg.Policy, Limits: t.m.cfg.Limits})
	if rr.Version == "" {
		return rr.Result, err
	}
	if aerr := t.adopt(ctx, rr, mf); aerr != nil {
		return rr.Result, errors.Join(err, aerr)
	}
	return rr.Result, err
}

// adopt makes the directory rr.Version: files whose content the tree had
// before are copied from here (checked against their hash), the others
// fetched from the store and checked.
func (t *Tree) adopt(ctx context.Context, rr RemoteResult, before *workspace.Manifest) error {
	v, err := workspace.ParseVersion(rr.Version)
	if err != nil {
		return err
	}
	ver := workspace.NewVersioner(&localFirst{Artifacts: t.m.cfg.Artifacts, dir: t.dir, before: before}, t.m.cfg.Limits)
	mf, err := ver.Restore(ctx, v, t.dir)
	if err != nil {
		return fmt.Errorf("runspace: bring the command's workspace of run %s (%s) here: %w", t.run, rr.Version, err)
	}
	t.version = rr.Version
	t.m.remember(t.version, mf)
	return nil
}

// localFirst serves a blob from the tree's own copy when the manifest it
// was stored as lists that content and the file still hashes to it; every
// other read goes to the store.
type localFirst struct {
	workspace.Artifacts
	dir    string
	before *workspace.Manifest
}

func (l *localFirst) Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error) {
	if l.before != nil {
		for _, e := range l.before.Entries {
			if e.Type != workspace.TypeFile || workspace.BlobKey(e) != k {
				continue
			}
			if b, ok := readLocal(l.dir, e); ok {
				return b, artifact.Info{Key: k, SHA256: e.SHA256, Size: e.Size}, nil
			}
			break
		}
	}
	return l.Artifacts.Get(ctx, k)
}

func readLocal(dir string, e workspace.Entry) ([]byte, bool) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false
	}
	defer root.Close()
	b, err := root.ReadFile(e.Path)
	if err != nil || int64(len(b)) != e.Size {
		return nil, false
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]) == e.SHA256
}
