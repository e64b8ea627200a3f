package upgrade

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/testbin"
)

// variants are the builds of testdata/prog the tests use.
var variants = []string{"v1", "v1-none", "v2-rename", "v2-removed", "v2-instructions", "v2-idempotent", "v2-pinned"}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// bins builds every variant once per test binary, into a directory
// removed by TestMain.
func bins(t *testing.T) map[string]string {
	t.Helper()
	testbin.SkipShort(t, "builds seven binaries of the agent program")
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "keel-upgrade-bin-")
		for _, v := range variants {
			if buildErr != nil {
				return
			}
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, v), "-ldflags", "-X main.variant="+v,
				"github.com/keelrun/keel/internal/proof/upgrade/testdata/prog")
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", v, err, b)
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	out := map[string]string{}
	for _, v := range variants {
		out[v] = filepath.Join(binDir, v)
	}
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// world is one scenario's directories: keel dev's data and the
// destination's log, shared by the versions that follow each other.
type world struct {
	t          *testing.T
	bins       map[string]string
	dir, data  string
	dest       string
	incarnated int
}

func newWorld(t *testing.T) *world {
	dir := t.TempDir()
	w := &world{t: t, bins: bins(t), dir: dir, data: filepath.Join(dir, "data"), dest: filepath.Join(dir, "dest")}
	if err := os.MkdirAll(w.dest, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_") {
			env = append(env, kv)
		}
	}
	return append(append(env, "UPGRADE_DEST="+w.dest), extra...)
}

// dev is one keel dev process of one variant.
type dev struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	c      *client.Client
	token  string
}

// start runs variant's keel dev on the world's data directory and waits
// until it serves.
func (w *world) start(ctx context.Context, variant string, env ...string) *dev {
	w.t.Helper()
	w.incarnated++
	urlFile := filepath.Join(w.data, "url")
	_ = os.Remove(urlFile)
	logf, err := os.Create(filepath.Join(w.dir, fmt.Sprintf("dev-%d-%s.log", w.incarnated, variant)))
	if err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command(w.bins[variant], "dev", "--addr", "127.0.0.1:0", "--data-dir", w.data)
	cmd.Env = w.env(env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	d := &dev{name: variant, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(d.exited) }()
	w.t.Cleanup(d.kill)
	for {
		b, err := os.ReadFile(urlFile)
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			tok, err := os.ReadFile(filepath.Join(w.data, "token"))
			if err != nil {
				w.t.Fatal(err)
			}
			d.token = strings.TrimSpace(string(tok))
			d.c, err = client.New(strings.TrimSpace(string(b)), strings.TrimSpace(string(tok)), &http.Client{Transport: &http.Transport{}})
			if err != nil {
				w.t.Fatal(err)
			}
			return d
		}
		select {
		case <-d.exited:
			w.t.Fatalf("keel dev %s exited before serving (log in %s)", variant, w.dir)
		case <-ctx.Done():
			w.t.Fatalf("keel dev %s: %v", variant, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill is a power cut: SIGKILL to the process group, then wait.
func (d *dev) kill() {
	if d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-d.exited
}

// died waits for the process to end by itself (a fault point's SIGKILL)
// and reports whether SIGKILL ended it.
func (d *dev) died(ctx context.Context) (bool, error) {
	select {
	case <-d.exited:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	ws, ok := d.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, nil
}

// preview runs variant's upgrade-check on the world's data directory.
func (w *world) preview(variant string) string {
	w.t.Helper()
	cmd := exec.Command(w.bins[variant], "upgrade-check", "--data-dir", w.data)
	cmd.Env = w.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s upgrade-check: %v\n%s", variant, err, out)
	}
	return string(out)
}

// cli runs a client command of variant's binary against d.
func (w *world) cli(t *testing.T, variant string, d *dev, args ...string) string {
	t.Helper()
	cmd := exec.Command(w.bins[variant], append([]string{"--url", d.c.BaseURL(), "--token", d.token}, args...)...)
	cmd.Env = w.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", variant, args, err, out)
	}
	return string(out)
}
