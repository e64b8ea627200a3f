package fs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// A key is one of two things:
//
//   - for content of up to linkMax bytes, a hard link to the object
//     itself: no inode of its own, no file to write and fsync. It is
//     recognised by what it holds: its content hashes to the name of an
//     object that is the same file (os.SameFile), which also verifies it.
//     A byte changed on disk changes the hash, and the key reads as
//     corrupt. Object names are never reused for another inode
//     (ensureObject), which is what makes the test sound.
//   - otherwise (and in stores of older versions), a pointer file,
//     "{sha256 hex} {size}\n", written to a temp file, fsync'd and linked
//     into place.
//
// Both are created with link(2), which fails if the name exists (a rename
// would replace it): the atomic "create if absent".
//
// Why not a symlink holding the hash in its target, which would also need
// no file of its own: a symlink's inode cannot be fsync'd. On a journaled
// file system the directory's fsync commits it too; on ext4 without a
// journal (this machine's disk is one) it writes the directory's entry and
// not the new inode, so a power loss could leave an entry to an inode never
// written. A hard link's inode is the object's, fsync'd before any name
// points to it.

// linkMax is the largest content a key links to directly: the size List
// and Get hash to tell the two forms apart, kept small so that is cheap.
const linkMax = 16 << 10

func pointerFile(info artifact.Info) []byte {
	return []byte(info.SHA256 + " " + strconv.FormatInt(info.Size, 10) + "\n")
}

// readPointerAt reads the key at p. For a key linked to its object it
// returns the content too, already verified.
func (s *Store) readPointerAt(k artifact.Key, p string) (artifact.Info, []byte, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return artifact.Info{}, nil, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
	}
	if err != nil {
		return artifact.Info{}, nil, fmt.Errorf("artifact fs: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return artifact.Info{}, nil, fmt.Errorf("artifact fs: %w", err)
	}
	if st.Size() > linkMax {
		return artifact.Info{}, nil, fmt.Errorf("%w: %s: %d bytes, neither a pointer nor small content", artifact.ErrCorrupt, k.Path(), st.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, linkMax+1))
	if err != nil {
		return artifact.Info{}, nil, fmt.Errorf("artifact fs: %w", err)
	}
	sum := sha256.Sum256(b)
	hx := hex.EncodeToString(sum[:])
	if ost, err := os.Stat(s.ObjectPath(hx)); err == nil && os.SameFile(st, ost) {
		return artifact.Info{Key: k, SHA256: hx, Size: int64(len(b))}, b, nil
	}
	info, err := parseFile(k, b)
	return info, nil, err
}

func parseFile(k artifact.Key, b []byte) (artifact.Info, error) {
	fields := strings.Fields(string(b))
	if len(fields) != 2 || len(fields[0]) != sha256.Size*2 {
		return artifact.Info{}, fmt.Errorf("%w: %s: not the content it was linked as, nor a pointer", artifact.ErrCorrupt, k.Path())
	}
	if _, err := hex.DecodeString(fields[0]); err != nil {
		return artifact.Info{}, fmt.Errorf("%w: %s: not the content it was linked as, nor a pointer", artifact.ErrCorrupt, k.Path())
	}
	size, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || size < 0 {
		return artifact.Info{}, fmt.Errorf("%w: %s: not the content it was linked as, nor a pointer", artifact.ErrCorrupt, k.Path())
	}
	return artifact.Info{Key: k, SHA256: fields[0], Size: size}, nil
}

// createPointer creates k's key, failing with fs.ErrExist if k has one.
// It is called only once the content is durable, so no crash can leave a
// key to missing or partial content. The key's inode is durable when it
// returns, its name not yet: the caller syncs its directory.
func (s *Store) createPointer(k artifact.Key, info artifact.Info) error {
	p := s.pointerPath(k)
	if info.Size <= linkMax {
		err := s.retryMkdir(p, func() error { return os.Link(s.ObjectPath(info.SHA256), p) })
		if err == nil {
			s.note("link", p)
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		if !errors.Is(err, syscall.EMLINK) {
			return err
		}
		// The object has all the links its file system allows (65,000 on
		// ext4): this key gets a pointer file.
	}
	// The temp file goes in the run's directory, beside its pointer; a
	// nested pointer's (an over-long key) in tmp/, where no List looks.
	dir := s.runDir(k.RunID)
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
	if err := os.MkdirAll(filepath.Dir(p), dirMode); err != nil {
		return fmt.Errorf("artifact fs: %w", err)
	}
	return create()
}
