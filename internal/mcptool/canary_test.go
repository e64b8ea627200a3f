package mcptool_test

import (
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/keelrun/keel/keeltest"
)

// accessToken is what the fixture's OAuth server issues (at-UNIXNANO).
var accessToken = regexp.MustCompile(`at-[0-9]{15,}`)

// assertNoCanary fails when the bearer token appears in anything Keel
// keeps or shows: every file of the data directory (the SQLite store,
// artifacts, bundles), the program's output (its logs), and what the
// API and the CLI show of each run (events, explain, bundle).
func assertNoCanary(t *testing.T, p *keeltest.Program, runID string) {
	t.Helper()
	dir := p.DataDir()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a temp file the live server renamed or removed meanwhile
		}
		if err != nil {
			return err
		}
		if strings.Contains(string(b), canary) {
			t.Errorf("the MCP bearer token is in %s", path)
		}
		if m := accessToken.Find(b); m != nil {
			t.Errorf("an OAuth access token (%s) is in %s", m, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Output(), canary) {
		t.Error("the MCP bearer token is in keel dev's output")
	}
	_, agent := binaries(t)
	bundle := filepath.Join(t.TempDir(), "bundle.tar.gz")
	for _, args := range [][]string{{"show", runID}, {"explain", runID}, {"events", "--json", runID}, {"artifacts", runID}, {"bundle", "-o", bundle, runID}} {
		cmd := exec.Command(agent, args...)
		cmd.Env = append(os.Environ(), "KEEL_URL="+p.URL, "KEEL_TOKEN="+p.Token)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("%s %v: %v\n%s", agent, args, err, out)
		}
		if strings.Contains(string(out), canary) {
			t.Errorf("the MCP bearer token is in `%v`", args)
		}
	}
	f, err := os.Open(bundle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || strings.Contains(string(b), canary) {
		t.Errorf("the debug bundle (%d bytes) is empty or holds the MCP bearer token", len(b))
	}
}
