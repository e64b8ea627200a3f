package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
)

// TestVerifyCorrupt is issue #32 item 6: `keel verify` of a run in a
// database file damaged under it (a page of its events overwritten) says
// the database is corrupt, not that the log was truncated or edited.
func TestVerifyCorrupt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keel.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "cli-user", Agent: "research", Request: "x",
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
	st, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := api.New(api.Deps{Store: st, Starter: &scriptedStarter{st: st, ctx: ctx}, Resumer: noopResumer{},
		Auth: api.Tokens{token: "cli-user"}, Agents: api.AgentSet{"research": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e := &testEnv{t: t, st: st, srv: srv, dbPath: path}
	code, out, errout := e.keel("", "verify", r.ID)
	if code == 0 || !strings.Contains(out+errout, "corrupt") || strings.Contains(out+errout, "truncated") {
		t.Fatalf("verify of a run in a corrupted database: exit %d\n%s%s", code, out, errout)
	}
}
