package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/store/storetest"
)

// fileTamperer edits the events table with plain SQL on the database file,
// as someone with write access to it would.
type fileTamperer struct{ db *sql.DB }

// eventKey is the events table's key of a run's seq (migration 0005).
const eventKey = `((SELECT rk FROM runs WHERE id = ?) << 32) + ?`

// CommitHashesOnly: the store keeps the hash of each commit's last event
// only (migration 0006).
func (fileTamperer) CommitHashesOnly() {}

var _ storetest.CommitHashes = fileTamperer{}

func (f fileTamperer) EditEventData(ctx context.Context, runID string, seq int64, data []byte) error {
	_, err := f.db.ExecContext(ctx, `UPDATE events SET data = ? WHERE ek = `+eventKey, data, runID, seq)
	return err
}

func (f fileTamperer) DeleteEvent(ctx context.Context, runID string, seq int64) error {
	_, err := f.db.ExecContext(ctx, `DELETE FROM events WHERE ek = `+eventKey, runID, seq)
	return err
}

func (f fileTamperer) SwapEvents(ctx context.Context, runID string, a, b int64) error {
	// Through negative keys, so that neither move meets the other row.
	_, err := f.db.ExecContext(ctx, `UPDATE events SET ek = -(CASE ek WHEN `+eventKey+` THEN `+eventKey+` ELSE `+eventKey+` END)
		WHERE ek IN (`+eventKey+`, `+eventKey+`)`, runID, a, runID, b, runID, a, runID, a, runID, b)
	if err == nil {
		_, err = f.db.ExecContext(ctx, `UPDATE events SET ek = -ek WHERE ek < 0`)
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
