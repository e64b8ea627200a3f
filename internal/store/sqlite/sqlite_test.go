package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/store/sqlite"
	"github.com/keelrun/keel/internal/store/storetest"
)

func opener(t *testing.T) storetest.Open {
	path := filepath.Join(t.TempDir(), "keel.db")
	return func(clock func() time.Time) (store.Store, error) {
		return sqlite.Open(context.Background(), path, sqlite.Options{Clock: clock})
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, opener)
}
