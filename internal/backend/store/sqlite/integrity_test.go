package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// CorruptDatabase writes a database at path with a run of many events,
// closes it, and overwrites part of a page in the second half of the file
// with garbage, as a bad disk or a stray write would: what issue #32
// item 6 served silently.
func corruptDatabase(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "a", Request: "x",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		d, _ := json.Marshal(map[string]string{"note": fmt.Sprintf("event %d %s", i, strings.Repeat("x", 200))})
		if _, err := st.AppendEvents(ctx, r.ID, []run.Event{{Type: run.EventInputReceived, Data: d}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil { // checkpoints the WAL into the file
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	garbage := []byte(strings.Repeat("\xde\xad\xbe\xef", 64))
	// Every page of the file's second half (where the events are, past
	// what Open reads), so the damage hits a used page whatever the
	// schema's layout.
	for off := fi.Size() * 3 / 4 / 4096 * 4096; off < fi.Size(); off += 4096 {
		if _, err := f.WriteAt(garbage, off+64); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckIntegrity: an intact database passes; a really corrupted file
// is reported as store.ErrCorrupt.
func TestCheckIntegrity(t *testing.T) {
	ctx := context.Background()
	good, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "good.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := good.CheckIntegrity(ctx); err != nil {
		t.Fatalf("intact database: %v", err)
	}
	path := filepath.Join(t.TempDir(), "bad.db")
	corruptDatabase(t, path)
	bad, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatalf("open: %v (the damage is in the events, past what Open reads)", err)
	}
	defer bad.Close()
	if err := bad.CheckIntegrity(ctx); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("corrupted database: %v, want ErrCorrupt", err)
	}
}
