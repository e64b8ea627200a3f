package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// defaultPageSize is the page size of a file this package creates:
// SQLite's own default. A smaller page makes a store of small rows smaller
// (each of the schema's 27 tables and indexes costs one page even empty,
// and a plain step's commit writes a few leaf pages, each a WAL frame of
// its fsync): with 1 KiB, BenchmarkStepVsFloor's file was 0.47 MB, 1.92×
// the floor's, against 0.54 MB at 4 KiB. But a row larger than about a quarter page
// of an index b-tree (a WITHOUT ROWID plan item with its args and result)
// and the local Step Functions executor's history rows in the same file
// then spill into mostly empty overflow pages: `bench/load -n 200` wrote
// 57 KB per run at 1 KiB against 36 KB at 4 KiB. So the default stays,
// and Options.PageSize is there for a store known to hold small rows.
const defaultPageSize = 4096

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
