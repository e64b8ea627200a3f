package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// defaultPageSize is the page size of a file this package creates. A plain
// step changes one leaf page of each of a few tables; each is a WAL frame
// of the commit and its fsync, so small pages write (and sync) a quarter of
// what SQLite's default 4 KiB does for rows of a hundred bytes, and every
// table and index of the schema costs 1 KiB in an empty file instead of 4.
// A payload larger than a page goes to overflow pages of the same total
// size, read in one more step each. Files created before keep their size.
const defaultPageSize = 1024

// initFile gives a file that does not exist yet (or is empty) its page
// size and WAL mode, before anything else writes it: SQLite fixes the page
// size when it first writes the file, and a file in WAL mode keeps it. Two
// processes creating one file at once both ask for the same; the second's
// request finds the file written and is ignored.
func initFile(ctx context.Context, path string, pageSize int) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.Size() > 0:
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=page_size(%d)", path, pageSize))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	return db.Close()
}
