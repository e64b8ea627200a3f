package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestStdinBounded is finding 7 of issue #18: `keel run AGENT -` read all
// of stdin into memory; now it reads at most the API's body limit and
// says so, sending nothing.
func TestStdinBounded(t *testing.T) {
	e := newTestEnv(t, false)
	big := strings.Repeat("a", api.DefaultMaxBodyBytes+1)
	for _, args := range [][]string{{"run", "research", "-"}, {"input", "run_x", "-"}} {
		code, _, errout := e.keel(big, args...)
		if code != exitUsage || !strings.Contains(errout, "more than 1048576 bytes") {
			t.Errorf("%v with %d bytes on stdin: exit %d, %s", args, len(big), code, errout)
		}
	}
	if runs, _ := e.st.ListRuns(context.Background(), store.ListRunsQuery{Limit: 10}); len(runs.Runs) != 0 {
		t.Errorf("%d runs stored", len(runs.Runs))
	}
}

// TestShowFinishedApproval: a finished run's approval still pending (its
// deadline ran out during the wait) is not offered to be approved.
func TestShowFinishedApproval(t *testing.T) {
	e := newTestEnv(t, false)
	ctx := context.Background()
	r, _, err := e.st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "cli-user", Agent: "research", Request: "x", InputPolicy: run.InputQueue})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := run.ArgsHash([]byte(`{"a":1}`))
	for _, c := range []store.Commit{
		{Run: &store.RunPatch{Status: run.StatusRunning}, PlanItems: []run.PlanItem{{ID: "pi_1", Order: 1, Tool: "publish", Args: []byte(`{"a":1}`), ArgsHash: h, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval}}},
		{Run: &store.RunPatch{Status: run.StatusAwaitingApproval}, NewApprovals: []run.Approval{{ID: "apr_1", PlanItemID: "pi_1", Tool: "publish", Mode: run.ModeMutating, Args: []byte(`{"a":1}`), ArgsHash: h}}},
		{Run: &store.RunPatch{Status: run.StatusFailed}},
	} {
		l, err := e.st.AcquireLease(ctx, r.ID, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c.RunID, c.Token, c.Run.ReleaseLease = r.ID, l.Lease.Token, true
		if _, err := e.st.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errout := e.keel("", "show", r.ID)
	if code != 0 || strings.Contains(out, "keel approve") {
		t.Errorf("show: %d %s %s", code, out, errout)
	}
}

// TestDownloadOutput: -o never overwrites or follows a symlink unless
// --force (which replaces the link itself), and -o - is stdout.
func TestDownloadOutput(t *testing.T) {
	e := newTestEnv(t, false)
	ctx := context.Background()
	arts, err := artfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Deps{Store: e.st, Artifacts: arts, Starter: e.starter, Resumer: noopResumer{},
		Auth: api.Tokens{token: "cli-user"}, Agents: api.AgentSet{"research": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	r, _, err := e.st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "cli-user", Agent: "research", Request: "x", InputPolicy: run.InputQueue})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := arts.Put(ctx, artifact.Key{RunID: r.ID, CheckpointID: "cp_1", Name: "report.md"}, []byte("# report\n")); err != nil {
		t.Fatal(err)
	}
	keel := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		env := map[string]string{"KEEL_URL": srv.URL, "KEEL_TOKEN": token}
		c := &cli{stdin: bufio.NewReader(strings.NewReader("")), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
		code := execute(ctx, append([]string{"download"}, append(args, r.ID, "cp_1", "report.md")...), c)
		return code, out.String(), errb.String()
	}
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	victim := filepath.Join(dir, "victim")
	link := filepath.Join(dir, "link")
	os.WriteFile(existing, []byte("keep me"), 0o644)
	os.WriteFile(victim, []byte("keep me too"), 0o644)
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }

	if code, out, _ := keel("-o", "-"); code != 0 || out != "# report\n" {
		t.Errorf("-o -: %d %q", code, out)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error("-o - wrote a file named -")
	}
	if code, _, errout := keel("-o", existing); code != exitUsage || read(existing) != "keep me" {
		t.Errorf("-o existing: %d %s; file %q", code, errout, read(existing))
	}
	if code, _, _ := keel("-o", link); code != exitUsage || read(victim) != "keep me too" {
		t.Errorf("-o symlink: %d; target %q", code, read(victim))
	}
	if code, _, _ := keel("-o", filepath.Join(dir, "new.md")); code != 0 || read(filepath.Join(dir, "new.md")) != "# report\n" {
		t.Errorf("-o new: %d", code)
	}
	if code, _, errout := keel("--force", "-o", link); code != 0 || read(victim) != "keep me too" || read(link) != "# report\n" {
		t.Errorf("--force -o symlink: %d %s; target %q, link %q", code, errout, read(victim), read(link))
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("--force left the symlink in place: %v", err)
	}
}

// TestDevRefusesRemoteAddr (issue #18 finding 1): `keel dev --addr
// 0.0.0.0:...` is a usage error naming --allow-remote, and nothing is
// opened.
func TestDevRefusesRemoteAddr(t *testing.T) {
	dir := t.TempDir()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080"} {
		var out, errb strings.Builder
		c := &cli{stdin: bufio.NewReader(strings.NewReader("")), stdout: &out, stderr: &errb,
			getenv: func(string) string { return "" }}
		code := execute(context.Background(), []string{"dev", "--data-dir", dir, "--addr", addr}, c)
		if code != exitUsage || !strings.Contains(errb.String(), "--allow-remote") {
			t.Errorf("dev --addr %s: exit %d, %s", addr, code, errb.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the data directory holds %d entries: something was opened", len(entries))
	}
}

// TestUntrustedTextEscaped is item 4 of issue #32: show and runs printed a
// model's output and a run's input raw (an OSC sequence set the
// terminal's title), and the approval prompt showed U+202E raw, so what a
// person read could differ from what the args hash binds. Human output
// now shows them escaped; --json stays exact.
func TestUntrustedTextEscaped(t *testing.T) {
	e := newTestEnv(t, false)
	ctx := context.Background()
	const (
		title    = "\x1b]0;pwned\x07"
		rlo      = "\u202e"
		titleEsc = `\x1b]0;pwned\x07`
		rloEsc   = `\u202e`
	)
	r, _, err := e.st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "cli-user", Agent: "research",
		Request: "in " + title + " put " + rlo + "fdp.exe", InputPolicy: run.InputQueue})
	if err != nil {
		t.Fatal(err)
	}
	// Valid JSON holds ESC only as \u001b; U+202E it may hold raw.
	args, err := json.Marshal(map[string]string{"to": rlo + "moc.evil@bob", "subject": title})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := run.ArgsHash(args)
	output := "line one\n\ttab kept\n" + title + " and " + rlo + "txt.exe"
	tool := "publish" + title
	data, _ := json.Marshal(map[string]string{"tool": tool, "note": rlo + "done"})
	for _, c := range []store.Commit{
		{Run: &store.RunPatch{Status: run.StatusRunning}, PlanItems: []run.PlanItem{{ID: "pi_1", Order: 1, Tool: tool, Args: args, ArgsHash: h, Mode: run.ModeMutating, Status: run.PlanAwaitingApproval}},
			Events: []run.Event{{Type: run.EventToolProgress, PlanItemID: "pi_1", Data: data}}},
		{Run: &store.RunPatch{Status: run.StatusAwaitingApproval, Output: &output}, NewApprovals: []run.Approval{{ID: "apr_1", PlanItemID: "pi_1", Tool: tool, Mode: run.ModeMutating, Args: args, ArgsHash: h}}},
	} {
		l, err := e.st.AcquireLease(ctx, r.ID, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c.RunID, c.Token, c.Run.ReleaseLease = r.ID, l.Lease.Token, true
		if _, err := e.st.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  []string
	}{
		{"show", "", []string{"show", r.ID}, []string{titleEsc, rloEsc, "line one\n\ttab kept\n", "publish" + titleEsc}},
		{"runs", "", []string{"runs"}, []string{titleEsc, rloEsc}},
		{"approve prompt", "n\n", []string{"approve", r.ID}, []string{rloEsc + "moc.evil@bob", "publish" + titleEsc}},
		{"events", "", []string{"events", r.ID}, []string{"publish" + titleEsc, rloEsc + "done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out, errout := e.keel(tc.stdin, tc.args...)
			for _, s := range []string{out, errout} {
				if strings.ContainsAny(s, "\x1b\x07\u202e") {
					t.Errorf("raw control or bidi character printed: %q", s)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	// --json is exact JSON: decoded, the output is the stored one.
	code, out, errout := e.keel("", "show", "--json", r.ID)
	var got api.Run
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Output != output {
		t.Errorf("show --json: %d %q %s", code, got.Output, errout)
	}
}
