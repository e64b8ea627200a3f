package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/store/sqlite"
	"github.com/keelrun/keel/internal/store/storetest"
)

// fileTamperer edits the events table with plain SQL on the database file,
// as someone with write access to it would.
type fileTamperer struct{ db *sql.DB }

func (f fileTamperer) EditEventData(ctx context.Context, runID string, seq int64, data []byte) error {
	_, err := f.db.ExecContext(ctx, `UPDATE events SET data = ? WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND seq = ?`, data, runID, seq)
	return err
}

func (f fileTamperer) DeleteEvent(ctx context.Context, runID string, seq int64) error {
	_, err := f.db.ExecContext(ctx, `DELETE FROM events WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND seq = ?`, runID, seq)
	return err
}

func (f fileTamperer) SwapEvents(ctx context.Context, runID string, a, b int64) error {
	_, err := f.db.ExecContext(ctx, `UPDATE events SET seq = CASE seq WHEN ? THEN ? ELSE ? END
		WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND seq IN (?, ?)`, a, -b, -a, runID, a, b)
	if err == nil {
		_, err = f.db.ExecContext(ctx, `UPDATE events SET seq = -seq WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND seq < 0`, runID)
	}
	return err
}

func TestTamperDetected(t *testing.T) {
	storetest.RunTamper(t, func(t *testing.T) (storetest.Open, storetest.Tamperer) {
		path := filepath.Join(t.TempDir(), "keel.db")
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return func(clock func() time.Time) (store.Store, error) {
			return sqlite.Open(context.Background(), path, sqlite.Options{Clock: clock})
		}, fileTamperer{db: db}
	})
}
