package fs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ensureObject makes sure the content named sum is durable at its object
// path before any pointer to it is created. The order is what a power loss
// requires: the content is fsync'd in a temp file, linked to its name in
// its shard directory, and that directory synced (with its own entry, when
// the shard is new) — only then may a pointer name it.
//
// Only complete, fsync'd files are ever given an object's name, and a name
// once given is never replaced (link(2), not rename: small content's keys
// are hard links to the object's inode, see pointer.go), so an object that
// exists with the right size is complete (Get still re-hashes it). It may
// not be durable yet, though: a concurrent Put may have just linked it and
// not synced the directory. So an object this Store has not made durable
// itself costs one directory sync instead of a new write.
func (s *Store) ensureObject(sum string, data []byte) error {
	if s.objects.has(sum) {
		return nil
	}
	path := s.ObjectPath(sum)
	shard := filepath.Dir(path)
	st, err := os.Stat(path)
	if exists := err == nil; !exists || !st.Mode().IsRegular() || st.Size() != int64(len(data)) {
		tmp, err := s.writeTemp(shard, data)
		if err != nil {
			return err
		}
		if exists {
			// Damaged (the wrong size): replace it. Keys linked to the
			// damaged inode stay damaged, and Get says so.
			err = os.Rename(tmp, path)
		} else {
			err = os.Link(tmp, path)
		}
		os.Remove(tmp)
		switch {
		case err == nil:
			s.note("link", path)
		case errors.Is(err, fs.ErrExist):
			// A concurrent Put's: the same name, so the same content.
		default:
			return fmt.Errorf("artifact fs: %w", err)
		}
	}
	if err := s.makeDurable(shard); err != nil {
		return err
	}
	s.objects.add(sum)
	return nil
}

// writeTemp writes data to a new fsync'd file in dir (creating dir if
// needed), named tempPrefix and digits: beside where it is going, so the
// rename or link is atomic and the file system allocates its inode near
// its directory. (A shared tmp/ directory had every new inode allocated in
// one place; on this machine's ext4 the allocator there stepped over the
// inodes other processes had just freed, and a temp file cost 1 ms of CPU,
// three times one made beside its pointer — bench/load's profile.) A
// temp file a crash leaves is never read: List skips it (no "~" in its
// name), and objects are only found by their hash.
func (s *Store) writeTemp(dir string, data []byte) (string, error) {
	var f *os.File
	err := s.retryMkdir(filepath.Join(dir, tempPrefix), func() error {
		var err error
		f, err = os.CreateTemp(dir, tempPrefix+"*")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("artifact fs: %w", err)
	}
	name := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		s.fileSyncs.Add(1)
		werr = f.Sync()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(name)
		return "", fmt.Errorf("artifact fs: %w", werr)
	}
	s.note("syncfile", name)
	return name, nil
}

// tempPrefix starts every temp file's name.
const tempPrefix = ".put-"
