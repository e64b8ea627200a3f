package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// Store is a file-system artifact store. It is safe for concurrent use by
// goroutines and by processes sharing the root directory.
type Store struct {
	root, runsDir, objDir, tmpDir string

	// dirs and objects are what this Store knows to be durable, so that a
	// Put syncs only what it changed (see makeDurable, ensureObject).
	dirs, objects       knownSet
	fileSyncs, dirSyncs atomic.Uint64
	// trace, set only by tests, sees each durability-relevant operation in
	// order ("syncfile", "rename", "syncdir", "link").
	trace func(op, path string)
}

var _ artifact.Store = (*Store)(nil)

// dirMode is every directory's mode: only the owner reads artifacts.
const dirMode = 0o700

// New opens (creating if needed) a store rooted at dir, which it makes
// owner-only.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("artifact fs: empty root directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact fs: %w", err)
	}
	s := &Store{root: abs, runsDir: filepath.Join(abs, "runs"), objDir: filepath.Join(abs, "objects", "sha256"), tmpDir: filepath.Join(abs, "tmp")}
	// Artifacts hold runs' inputs and outputs: owner-only (dirMode, and
	// files are temp files, 0600 whatever the umask). A root and fixed
	// directories an older Keel made 0755 are narrowed here; below them
	// nothing is reachable by others once they are 0700.
	for _, d := range []string{s.objDir, s.runsDir, s.tmpDir} {
		if err := os.MkdirAll(d, dirMode); err != nil {
			return nil, fmt.Errorf("artifact fs: %w", err)
		}
	}
	for _, d := range []string{abs, filepath.Dir(s.objDir), s.objDir, s.runsDir, s.tmpDir} {
		if err := os.Chmod(d, dirMode); err != nil {
			return nil, fmt.Errorf("artifact fs: %w", err)
		}
	}
	// The fixed directories are never synced again (fixedDir), so make
	// their entries durable now, the root's own included: it may be new.
	for _, d := range []string{filepath.Dir(s.objDir), abs, filepath.Dir(abs)} {
		if err := s.syncDir(d); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ObjectPath is where the content with the given sha256 (hex) lives. It is
// exported for tests and operators (e.g. to inspect or corrupt a blob).
func (s *Store) ObjectPath(sum string) string {
	return filepath.Join(s.objDir, sum[:2], sum)
}

// Put stores data at k. See the package doc for durability and immutability.
func (s *Store) Put(ctx context.Context, k artifact.Key, data []byte) (artifact.Info, error) {
	if err := k.Validate(); err != nil {
		return artifact.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return artifact.Info{}, err
	}
	sumb := sha256.Sum256(data)
	info := artifact.Info{Key: k, SHA256: hex.EncodeToString(sumb[:]), Size: int64(len(data))}

	// Fast path: an existing pointer decides without writing anything.
	if existing, _, err := s.readPointer(k); err == nil {
		return s.existing(info, existing)
	} else if !errors.Is(err, artifact.ErrNotFound) {
		return artifact.Info{}, err
	}

	if err := s.ensureObject(info.SHA256, data); err != nil {
		return artifact.Info{}, err
	}
	if err := s.createPointer(k, info); err != nil {
		if errors.Is(err, fs.ErrExist) {
			existing, _, rerr := s.readPointer(k)
			if rerr != nil {
				return artifact.Info{}, rerr
			}
			return s.existing(info, existing)
		}
		return artifact.Info{}, fmt.Errorf("artifact fs: %w", err)
	}
	if err := s.makeDurable(filepath.Dir(s.pointerPath(k))); err != nil {
		return artifact.Info{}, err
	}
	return info, nil
}

// existing answers a Put whose key already has a pointer. Same content is a
// no-op, but the pointer may be one a concurrent Put created and has not
// synced yet: sync its directory before saying it is durable.
func (s *Store) existing(want, got artifact.Info) (artifact.Info, error) {
	info, err := samePointer(want, got)
	if err != nil {
		return artifact.Info{}, err
	}
	if err := s.makeDurable(filepath.Dir(s.pointerPath(want.Key))); err != nil {
		return artifact.Info{}, err
	}
	return info, nil
}

func samePointer(want, existing artifact.Info) (artifact.Info, error) {
	if existing.SHA256 == want.SHA256 && existing.Size == want.Size {
		return want, nil
	}
	return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrExists, want.Key.Path())
}

// Get returns the content at k after checking it against its hash.
func (s *Store) Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error) {
	if err := k.Validate(); err != nil {
		return nil, artifact.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, artifact.Info{}, err
	}
	info, data, err := s.readPointer(k)
	if err != nil {
		return nil, artifact.Info{}, err
	}
	if data != nil {
		return data, info, nil // a key linked to its object, verified as read
	}
	data, err = os.ReadFile(s.ObjectPath(info.SHA256))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s: content missing", artifact.ErrCorrupt, k.Path())
	}
	if err != nil {
		return nil, artifact.Info{}, fmt.Errorf("artifact fs: %w", err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != info.Size || hex.EncodeToString(sum[:]) != info.SHA256 {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrCorrupt, k.Path())
	}
	return data, info, nil
}
