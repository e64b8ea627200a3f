package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// TestVerify: keel verify accepts an untouched log, prints its head, and
// names an event edited in the database; the README's offline script
// agrees on both exports.
func TestVerify(t *testing.T) {
	e := newTestEnv(t, false)
	ctx := context.Background()
	code, out, errout := e.keel("audit me\n", "run", "--json", "research", "-")
	if code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errout)
	}
	var r api.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{`{"note":"café <&> \u2028"}`, `{"amount":12.5}`, `{"x":[1,2]}`} {
		if _, err := e.st.AppendEvents(ctx, r.RunID, []run.Event{{Type: run.EventInputReceived, Data: json.RawMessage(d)}}); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := e.st.GetRun(ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "audit.json")
	code, out, errout = e.keel("", "verify", "--export", good, r.RunID)
	if code != 0 || !strings.Contains(out, "verified") || !strings.Contains(out, stored.LastHash) {
		t.Fatalf("verify of an intact log: %d %s %s", code, out, errout)
	}
	offline(t, good, true)
	offline(t, good, true, stored.LastHash)
	offline(t, good, false, strings.Repeat("0", 64))

	db, err := sql.Open("sqlite", "file:"+e.dbPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE events SET data = '{"amount":99.5}' WHERE ek = ((SELECT rk FROM runs WHERE id = ?) << 32) + 3`, r.RunID); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "audit.json")
	code, out, _ = e.keel("", "verify", "--export", bad, r.RunID)
	if code == 0 || !strings.Contains(out, "TAMPERED seq 3: edited") {
		t.Fatalf("verify of an edited log: %d %s", code, out)
	}
	offline(t, bad, false)
}

// offline runs scripts/verify-audit.py, which docs/operating.md shows, on
// an export.
func offline(t *testing.T, export string, want bool, keptHead ...string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Log("no python3: the offline script is not run")
		return
	}
	script := filepath.Join("..", "..", "scripts", "verify-audit.py")
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), string(src)) {
		t.Fatal("docs/operating.md does not show scripts/verify-audit.py as it is")
	}
	out, err := exec.Command(py, append([]string{script, export}, keptHead...)...).CombinedOutput()
	if ok := err == nil; ok != want || !strings.Contains(string(out), map[bool]string{true: "verified", false: "TAMPERED"}[want]) {
		t.Fatalf("offline verification = %v (%v), want %v:\n%s", ok, err, want, out)
	}
}
