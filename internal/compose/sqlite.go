//go:build !keel_lambda

package compose

import (
	"context"
	"os"
	"path/filepath"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
)

// SQLiteStore and SQLiteOptions are the embedded store's, in every build
// but keel_lambda (the deployment build leaves SQLite out: see
// sqlite_omitted.go).
type (
	SQLiteStore   = sqlite.Store
	SQLiteOptions = sqlite.Options
)

func openSQLite(ctx context.Context, path string, o SQLiteOptions) (*SQLiteStore, error) {
	// Owner-only: the directory (keel dev's data directory, by default)
	// holds every run.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, path, o)
}
