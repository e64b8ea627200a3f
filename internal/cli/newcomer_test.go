package cli

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/run"
)

// run runs the command line in-process as program prog, with env, looking
// for .keel/ from dir.
func runAs(t *testing.T, prog, dir string, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	c := &cli{prog: prog, dir: dir, stdin: bufio.NewReader(strings.NewReader("")), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return env[k] }}
	code = execute(context.Background(), args, c)
	return code, out.String(), errb.String()
}

// writeDevDir writes the url and token files `dev` writes into DIR/.keel.
func writeDevDir(t *testing.T, dir, url, tok string) {
	t.Helper()
	d := filepath.Join(dir, devDirName)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"url": url + "\n", "token": tok + "\n"} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiscoverDevDir: a client command in a new shell finds the runtime
// through .keel/ in its directory or a parent, and sends the token file
// only to the runtime it belongs to.
func TestDiscoverDevDir(t *testing.T) {
	e := newTestEnv(t, false)
	project := t.TempDir()
	writeDevDir(t, project, e.srv.URL, token)
	sub := filepath.Join(project, "cmd", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	other := t.TempDir()
	writeDevDir(t, other, e.srv.URL, "tok-other")
	cases := []struct {
		name string
		dir  string
		env  map[string]string
		code int
		want string // in stderr
	}{
		{name: "in the project", dir: project, code: exitOK},
		{name: "below the project", dir: sub, code: exitOK},
		{name: "KEEL_DATA_DIR from anywhere", dir: elsewhere, env: map[string]string{"KEEL_DATA_DIR": filepath.Join(project, devDirName)}, code: exitOK},
		{name: "KEEL_URL with the file's token", dir: project, env: map[string]string{"KEEL_URL": e.srv.URL + "/"}, code: exitOK},
		{name: "KEEL_TOKEN wins over the file", dir: project, env: map[string]string{"KEEL_TOKEN": "wrong"}, code: exitFailure, want: "check the token"},
		{name: "another runtime's token is not sent", dir: project, env: map[string]string{"KEEL_URL": "http://127.0.0.1:1"}, code: exitFailure, want: "is `myprog dev` running?"},
		{name: "a project with the other token", dir: other, code: exitOK},
		{name: "nothing to find", dir: elsewhere, code: exitUsage, want: "start `myprog dev` here"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runAs(t, "myprog", tc.dir, tc.env, "runs")
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q), stdout %q", code, tc.code, errOut, tc.want, out)
			}
			if strings.Contains(errOut, "usage:") {
				t.Errorf("stderr %q: a usage block after an error that is not the command line's", errOut)
			}
		})
	}
}

// TestConnectionRefused: a stale .keel/url (dev stopped) says what to do.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	writeDevDir(t, dir, "http://"+addr, "t")
	code, _, errOut := runAs(t, "shop", dir, nil, "show", "run_x")
	if code != exitFailure || !strings.Contains(errOut, "nothing answers at http://"+addr+": is `shop dev` running?") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestLazyAgents: the client commands never build the agents, so they need
// none of the agents' configuration; a command that runs them reports the
// failure as a configuration error (exit 2, no usage block).
func TestLazyAgents(t *testing.T) {
	e := newTestEnv(t, false)
	loads := 0
	load := func() (compose.App, error) {
		loads++
		return compose.App{}, errors.New("SHOP_DB_URL is not set")
	}
	env := map[string]string{"KEEL_URL": e.srv.URL, "KEEL_TOKEN": token}
	cases := []struct {
		name  string
		args  []string
		code  int
		want  string // in stderr
		loads int
	}{
		{name: "runs", args: []string{"runs"}, code: exitOK},
		{name: "show", args: []string{"show", "run_nope"}, code: exitNotFound, want: "shop show: not_found"},
		{name: "help", args: []string{"help"}, code: exitOK},
		{name: "dev", args: []string{"dev", "--data-dir", t.TempDir()}, code: exitUsage, want: "shop dev: SHOP_DB_URL is not set", loads: 1},
		{name: "step", args: []string{"step", "run_x"}, code: exitUsage, want: "shop step: SHOP_DB_URL is not set", loads: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			loads = 0
			var out, errb strings.Builder
			code := MainLazy(context.Background(), IO{Prog: "shop", Args: tc.args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv: func(k string) string { return env[k] }}, load)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) || loads != tc.loads {
				t.Fatalf("exit %d (want %d), %d loads (want %d), stderr %q (want %q)", code, tc.code, loads, tc.loads, errb.String(), tc.want)
			}
			if strings.Contains(errb.String(), "usage:") {
				t.Errorf("stderr %q: a usage block after a configuration error", errb.String())
			}
		})
	}
}

// TestConfigErrorNoUsage: a bad environment variable is named, and the
// command line, which was right, is not printed back as a usage block.
func TestConfigErrorNoUsage(t *testing.T) {
	env := map[string]string{"KEEL_STEP_BUDGET": "soon"}
	code, _, errOut := runAs(t, "shop", t.TempDir(), env, "dev", "--data-dir", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "KEEL_STEP_BUDGET") || strings.Contains(errOut, "usage:") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestHintsNameTheProgram: the hints a user copies name their program.
func TestHintsNameTheProgram(t *testing.T) {
	code, _, errOut := runAs(t, "shop", t.TempDir(), nil, "launch")
	if code != exitUsage || !strings.Contains(errOut, "shop: unknown command") || !strings.Contains(errOut, "usage: shop ") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	var out strings.Builder
	rd := newRenderer(&out, "shop", "http://127.0.0.1:8080/", "run_1")
	rd.event(approvalRequested("run_1", "apr_1"))
	for _, want := range []string{"answer with: shop approve run_1 apr_1", "(or: shop deny …)", "run viewer: http://127.0.0.1:8080/"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress %q lacks %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "keel ") {
		t.Errorf("progress %q names keel", out.String())
	}
}

// TestInitNextStep: init writes a .gitignore keeping the token out of
// git, and its next step is one that works: with --replace the plain
// one; without it, from inside a Keel checkout, the replace of that
// checkout; elsewhere, the replace the user must fill in.
func TestInitNextStep(t *testing.T) {
	root := repoRoot(t)
	cases := []struct {
		name    string
		from    string
		replace bool
		want    string
	}{
		{name: "with --replace", from: t.TempDir(), replace: true, want: "&& go mod tidy && go test ./... && go run . dev"},
		{name: "inside a checkout", from: filepath.Join(root, "internal"), want: "go mod edit -replace " + keelModule + "=" + shellQuote(root) + " && go mod tidy"},
		{name: "elsewhere", from: t.TempDir(), want: "go mod edit -replace " + keelModule + "=PATH_TO_KEEL_CHECKOUT && go mod tidy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shop")
			args := []string{"init", dir}
			if tc.replace {
				args = []string{"init", "--replace", root, dir}
			}
			code, out, errOut := runAs(t, "keel", tc.from, nil, args...)
			if code != exitOK || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, stdout %q (want %q), stderr %q", code, out, tc.want, errOut)
			}
			if tc.replace && strings.Contains(out, "go mod edit") {
				t.Errorf("stdout %q: a replace step after --replace", out)
			}
			b, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
			if err != nil || !strings.Contains(string(b), ".keel/\n") || !strings.Contains(string(b), "bin/\n") {
				t.Errorf(".gitignore %q (%v): want .keel/ and bin/", b, err)
			}
		})
	}
}

func approvalRequested(runID, approvalID string) api.Event {
	return api.Event{Seq: 1, Type: run.EventApprovalRequested,
		Data: data(map[string]any{"approval_id": approvalID, "tool": "send_email", "args_hash": "sha256:ab"})}
}

// TestOwnCommands: explain's suggestions name the user's program.
func TestOwnCommands(t *testing.T) {
	cases := []struct{ prog, in, want string }{
		{"shop", "next: keel approve run_1 apr_1   (or: keel deny run_1 apr_1 --reason …)\n",
			"next: shop approve run_1 apr_1   (or: shop deny run_1 apr_1 --reason …)\n"},
		{"go run .", "keel bundle run_1 -o run_1.tar.gz", "go run . bundle run_1 -o run_1.tar.gz"},
		{"shop", "keel dev restarted; github.com/keelrun/keel keeps it", "shop dev restarted; github.com/keelrun/keel keeps it"},
		{"keel", "keel fork run_1", "keel fork run_1"},
		{"a$1", "keel events run_1", "a$1 events run_1"},
	}
	for _, tc := range cases {
		t.Run(tc.prog+" "+tc.in, func(t *testing.T) {
			if got := ownCommands(tc.in, tc.prog); got != tc.want {
				t.Errorf("ownCommands(%q, %q) = %q, want %q", tc.in, tc.prog, got, tc.want)
			}
		})
	}
}

// TestDevExportsDataDir: dev's --data-dir is KEEL_DATA_DIR by the time the
// agents are built, so what an agent keeps locally goes there.
func TestDevExportsDataDir(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{}
	var seen string
	load := func() (compose.App, error) {
		seen = env["KEEL_DATA_DIR"]
		return compose.App{}, errors.New("stop here")
	}
	var out, errb strings.Builder
	MainLazy(context.Background(), IO{Prog: "shop", Args: []string{"dev", "--data-dir", dir}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] }, Setenv: func(k, v string) error { env[k] = v; return nil }}, load)
	if seen != dir {
		t.Fatalf("the agents saw KEEL_DATA_DIR=%q, want %q (stderr %q)", seen, dir, errb.String())
	}
}
