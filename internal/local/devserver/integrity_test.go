package devserver_test

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
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/fixture"
	"github.com/keelrun/keel/internal/fixture/fixturetest"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/local/devserver"
)

// TestCorruptDatabaseRefused is issue #32 item 6: keel dev on a database
// file damaged in the middle (a page of events overwritten) refuses to
// start, saying the store is corrupt, instead of serving what it reads.
func TestCorruptDatabaseRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "keel.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "dev", Agent: fixture.AgentName, Request: "x",
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
	if err := st.Close(); err != nil {
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
	// Every page of the file's last quarter, where the events are: the
	// damage hits a used page whatever the schema's layout.
	for off := fi.Size() * 3 / 4 / 4096 * 4096; off < fi.Size() && err == nil; off += 4096 {
		_, err = f.WriteAt([]byte(strings.Repeat("\xde\xad\xbe\xef", 64)), off+64)
	}
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"KEEL_DATA_DIR": dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := compose.Open(ctx, cfg.Defaults(), fixturetest.App(fixture.DirPublisher{Dir: dir}), compose.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{DataDir: dir, Addr: "127.0.0.1:0", Runtime: rt})
	if err == nil {
		srv.Close()
		t.Fatal("keel dev served a corrupted database")
	}
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("refusal: %v", err)
	}
}
