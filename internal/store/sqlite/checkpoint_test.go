package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// The writer never checkpoints (wal_autocheckpoint is 0 on its
// connection); the checkpointer does, once checkpointEvery writes have
// committed, and after it every frame of the WAL is in the database file.
func TestCheckpointBesideTheWriter(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "keel.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var auto int
	if err := s.DB().QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if auto != 0 {
		t.Fatalf("writer's wal_autocheckpoint = %d, want 0", auto)
	}
	if err := s.WriteTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE ck_test (n INTEGER, pad TEXT)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := s.ck.runs.Load()
	for i := range checkpointEvery {
		if err := s.WriteTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO ck_test VALUES (?, printf('%.500c', 'x'))`, i)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Not a timing bound: how long to wait before calling it a hang.
	for deadline := time.Now().Add(30 * time.Second); s.ck.runs.Load() == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after %d writes", checkpointEvery)
		}
	}
	var busy, logFrames, done int
	if err := s.ReadDB().QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done); err != nil {
		t.Fatal(err)
	}
	if logFrames == 0 || done != logFrames {
		t.Fatalf("WAL %d frames, %d in the database file: want all, and some", logFrames, done)
	}
}
