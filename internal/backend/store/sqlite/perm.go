package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// fileMode is the mode of the database and its -wal and -shm files: they
// hold every run, so only the owner reads them, whatever the umask.
const fileMode = 0o600

// createOwnerOnly creates the database file, empty, with fileMode when it
// does not exist yet. SQLite gives the -wal and -shm files it creates the
// database file's mode (and sets it past the umask), so creating this one
// first is what makes them owner-only too; left to SQLite, all three would
// be 0644 under the usual umask.
func createOwnerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	// A umask such as 0277 would have left it unwritable: the mode is set.
	if err := f.Chmod(fileMode); err != nil {
		f.Close()
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	return f.Close()
}

// narrowModes sets fileMode on the database and on its -wal and -shm files
// where they exist: a database an older Keel created (0644) is narrowed
// once opened. A file that is not there is no error.
func narrowModes(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, fileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sqlite: open %s: %w", path, err)
		}
	}
	return nil
}
