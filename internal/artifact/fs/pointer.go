package fs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/artifact"
)

// A pointer is a small file, "{sha256 hex} {size}\n", written to a temp
// file, fsync'd and linked into place: link(2) fails if the name exists
// (a rename would replace it), so it is the atomic "create if absent".
//
// Why not a symlink holding the hash in its target, which would need no
// temp file and no fsync of its own: the target lives in the symlink's
// inode, which no call can fsync. On a journaled file system the
// directory's fsync commits it too; on ext4 without a journal (this
// machine's disk is one) it writes the directory's entry and not the new
// inode, so a power loss could leave an entry to an inode never written.
// A file is fsync'd itself before any name points to it.

func pointerFile(info artifact.Info) []byte {
	return []byte(info.SHA256 + " " + strconv.FormatInt(info.Size, 10) + "\n")
}

// readPointerAt reads the pointer at p.
func (s *Store) readPointerAt(k artifact.Key, p string) (artifact.Info, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
	}
	if err != nil {
		return artifact.Info{}, fmt.Errorf("artifact fs: %w", err)
	}
	return parseFile(k, b)
}

func parseFile(k artifact.Key, b []byte) (artifact.Info, error) {
	fields := strings.Fields(string(b))
	if len(fields) != 2 || len(fields[0]) != sha256.Size*2 {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	if _, err := hex.DecodeString(fields[0]); err != nil {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	size, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || size < 0 {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	return artifact.Info{Key: k, SHA256: fields[0], Size: size}, nil
}

// createPointer creates k's pointer, failing with fs.ErrExist if k has
// one. It is called only once the content is durable, so no crash can
// leave a pointer to missing or partial content. The pointer's file is
// durable when it returns, its name not yet: the caller syncs its
// directory.
func (s *Store) createPointer(k artifact.Key, info artifact.Info) error {
	// The temp file goes in the run's directory, beside its pointer; a
	// nested pointer's (an over-long key) in tmp/, where no List looks.
	p, dir := s.pointerPath(k), s.runDir(k.RunID)
	if flatName(k) == "" {
		dir = s.tmpDir
	}
	tmp, err := s.writeTemp(dir, pointerFile(info))
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = s.retryMkdir(p, func() error { return os.Link(tmp, p) })
	if errors.Is(err, fs.ErrExist) {
		return fs.ErrExist
	}
	if err != nil {
		return err
	}
	s.note("link", p)
	return nil
}

// retryMkdir runs create, and when it fails because p's directory is
// missing, creates the directory and runs it again: the common case (the
// directory exists) costs one system call, not a stat per level.
func (s *Store) retryMkdir(p string, create func() error) error {
	err := create()
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("artifact fs: %w", err)
	}
	return create()
}
