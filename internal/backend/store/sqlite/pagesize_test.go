package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestPageSize: a new file gets the page size asked for (SQLite's 4096 by
// default), an existing file keeps its own, and a size SQLite cannot use
// is refused naming it.
func TestPageSize(t *testing.T) {
	ctx := context.Background()
	pageSize := func(s *sqlite.Store) int {
		var n int
		must(t, s.DB().QueryRowContext(ctx, `PRAGMA page_size`).Scan(&n))
		return n
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		file string
		opt  int
		want int
	}{
		{"Default", "a.db", 0, 4096},
		{"Small", "b.db", 1024, 1024},
		{"ExistingKeepsItsOwn", "b.db", 8192, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(ctx, filepath.Join(dir, tc.file), sqlite.Options{PageSize: tc.opt})
			must(t, err)
			defer s.Close()
			if got := pageSize(s); got != tc.want {
				t.Fatalf("page size %d, want %d", got, tc.want)
			}
		})
	}
	for _, bad := range []int{-1, 256, 1000, 131072} {
		_, err := sqlite.Open(ctx, filepath.Join(dir, "c.db"), sqlite.Options{PageSize: bad})
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "page size") {
			t.Fatalf("PageSize %d: %v, want ErrInvalid naming the page size", bad, err)
		}
	}
}
