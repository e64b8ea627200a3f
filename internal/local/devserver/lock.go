package devserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Lock is what one keel dev holds exclusively while it runs: its data
// directory and, on SQLite, the database file. Both are flocks on the
// files themselves, so they follow the file, not the path that named it:
// a second keel dev reaching the same database through a symlink, a hard
// link or a bind mount of its directory opens the same inode and finds it
// held.
//
// Take it with AcquireLock before the store is opened (compose.Open):
// through a hard link SQLite would keep a WAL of its own beside the other
// name, and a second writer there corrupts the database before any later
// check could refuse it.
type Lock struct {
	dir, db *os.File
}

// AcquireLock creates dataDir (owner-only) if needed and locks it, and,
// when store is "sqlite:PATH", the database file PATH itself (created
// empty, owner-only, when missing: SQLite takes an empty file for a new
// database). An error names what is held and by whom.
func AcquireLock(dataDir, store string) (*Lock, error) {
	// Owner-only, as documented: MkdirAll leaves an existing directory
	// (an older Keel's 0755) as it is, so its mode is set too.
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	l := &Lock{}
	var err error
	lockPath := filepath.Join(dataDir, "lock")
	if l.dir, err = lockFile(lockPath, "data dir "+dataDir); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w%s", err, holder(dataDir, lockPath))
		}
		return nil, err
	}
	// Who holds it, for the error of a second keel dev: the lock file's
	// content (the flock, not the content, is the lock).
	if err := l.dir.Truncate(0); err == nil {
		_, _ = fmt.Fprintf(l.dir, "pid %d\n", os.Getpid())
	}
	if path, ok := strings.CutPrefix(store, "sqlite:"); ok {
		// Another data directory may name the same database file: the
		// file is held too, or a second keel dev would end this one's
		// leases.
		if l.db, err = lockFile(path, "database "+path); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Close releases the locks. On SQLite it must come after the store is
// closed: closing any descriptor of the database file drops the POSIX
// locks SQLite holds on it in this process.
func (l *Lock) Close() error {
	if l == nil {
		return nil
	}
	var err error
	for _, f := range []*os.File{l.db, l.dir} {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
	}
	l.db, l.dir = nil, nil
	return err
}

// holder says where the keel dev holding dataDir's lock is: its process
// (the lock file's content) and the URL it serves (dataDir/url), as far as
// they are written.
func holder(dataDir, lockPath string) string {
	var parts []string
	if b, err := os.ReadFile(lockPath); err == nil {
		if pid := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "pid")); pid != "" {
			parts = append(parts, "process "+pid)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, "url")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		parts = append(parts, "serving at "+strings.TrimSpace(string(b)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the other one is " + strings.Join(parts, ", ") + ": use it, stop it, or give this one another --data-dir"
}

// lockFile holds an exclusive flock on path (created owner-only if
// missing) until the file is closed; what names the thing it guards in
// the error. flock and SQLite's POSIX (fcntl) locks are independent on
// Linux, so an flock on the database file itself does not disturb
// SQLite's own locking of it.
func lockFile(path, what string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another keel dev (the same file, whatever path, link or mount names it): %w", what, err)
		}
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	return f, nil
}
