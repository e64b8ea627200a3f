package fs

import (
	"crypto/sha256"
	"encoding/base64"
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

// A pointer is written as a symbolic link whose target is the content's
// sha256 in unpadded base64url and its size: "<43 characters>.<size>". It
// names no file (it dangles on purpose); Readlink reads it in one call.
//
// Why a symlink: symlink(2) creates the name and its whole target in one
// step, and fails if the name exists, so it is both the atomic "create if
// absent" and the write. A crash leaves the pointer absent or whole, and
// one fsync of its directory makes it durable; a pointer file instead
// needs a temp file, its own fsync, link(2) and an unlink. The target is
// kept under 60 bytes so that ext4 stores it inside the inode (a "fast"
// symlink, written with the inode in one journal transaction); XFS and
// btrfs keep short targets inline as well.
//
// Where symlinks cannot be made (some file systems, Windows without the
// privilege), Put falls back to the pointer file: "sha256-hex size\n",
// written to a fsync'd temp file and linked into place. Both forms are
// read everywhere, so a store written by an older Keel reads unchanged.

func encodeTarget(sum [sha256.Size]byte, size int64) string {
	return base64.RawURLEncoding.EncodeToString(sum[:]) + "." + strconv.FormatInt(size, 10)
}

func pointerFile(info artifact.Info) []byte {
	return []byte(info.SHA256 + " " + strconv.FormatInt(info.Size, 10) + "\n")
}

// readPointerAt reads the pointer at p, in either form.
func (s *Store) readPointerAt(k artifact.Key, p string) (artifact.Info, error) {
	target, err := os.Readlink(p)
	if errors.Is(err, fs.ErrNotExist) {
		return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
	}
	if err == nil {
		return parseTarget(k, target)
	}
	// Not a symlink (EINVAL): the pointer file of the fallback or of an
	// older store.
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
	}
	if err != nil {
		return artifact.Info{}, fmt.Errorf("artifact fs: %w", err)
	}
	return parseFile(k, b)
}

func parseTarget(k artifact.Key, target string) (artifact.Info, error) {
	b64, sizeText, ok := strings.Cut(target, ".")
	sum, err := base64.RawURLEncoding.DecodeString(b64)
	if !ok || err != nil || len(sum) != sha256.Size {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 {
		return artifact.Info{}, fmt.Errorf("%w: %s: malformed pointer", artifact.ErrCorrupt, k.Path())
	}
	return artifact.Info{Key: k, SHA256: hex.EncodeToString(sum), Size: size}, nil
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
// leave a pointer to missing or partial content. The pointer is not yet
// durable when it returns: the caller syncs its directory.
func (s *Store) createPointer(k artifact.Key, sum [sha256.Size]byte, info artifact.Info) error {
	p := s.pointerPath(k)
	if !s.noSymlinks.Load() {
		err := s.retryMkdir(p, func() error { return os.Symlink(encodeTarget(sum, info.Size), p) })
		if err == nil {
			s.note("symlink", p)
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		// Any other failure: try the pointer file, and if that works this
		// file system has no symlinks for us; stop trying them.
		if ferr := s.linkPointerFile(p, info); ferr != nil {
			return errors.Join(err, ferr)
		}
		s.noSymlinks.Store(true)
		return nil
	}
	return s.linkPointerFile(p, info)
}

// linkPointerFile is the pointer without symlinks: a fsync'd temp file
// linked into place (link(2) fails if the name exists; a rename would
// replace it).
func (s *Store) linkPointerFile(p string, info artifact.Info) error {
	tmp, err := s.writeTemp(pointerFile(info))
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
