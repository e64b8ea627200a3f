package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/store/storetest"
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

func TestOpenSettings(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keel.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{BusyTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"}, // FULL
		{"foreign_keys", "1"},
		{"busy_timeout", "3000"},
	}
	for _, tc := range cases {
		t.Run(tc.pragma, func(t *testing.T) {
			var got string
			if err := s.DB().QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
			}
		})
	}
}

func TestMigrations(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keel.db")
	versions := func(s *sqlite.Store) []int {
		t.Helper()
		rows, err := s.DB().QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []int
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := versions(s)
	if len(first) == 0 || first[0] != 1 {
		t.Fatalf("versions after first open = %v", first)
	}
	must(t, s.Close())

	// Reopening applies nothing twice.
	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again := versions(s); len(again) != len(first) {
		t.Fatalf("versions after reopen = %v, want %v", again, first)
	}
	// A file written by a newer binary is refused, not silently used.
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	must(t, s.Close())
	if _, err := sqlite.Open(ctx, path, sqlite.Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("open of a newer schema: %v, want an error saying it is newer", err)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	if _, err := sqlite.Open(t.Context(), "", sqlite.Options{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Open(\"\") = %v, want ErrInvalid", err)
	}
}

// leasedRun opens a fresh store (closed at the test's end) with one run
// that worker w1 holds the lease of.
func leasedRun(t testing.TB) (*sqlite.Store, run.Run) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r, _, err := s.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "ses_1", Owner: "alice", Agent: "a", Request: "q"})
	if err == nil {
		r, err = s.AcquireLease(ctx, r.ID, "w1", time.Minute)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
