package cli_test

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/testbin"
)

// devProc is a `keel dev` process of the test.
type devProc struct {
	cmd    *exec.Cmd
	out    *syncBuf
	exited chan error
}

// syncBuf is output written by a process and read by the test.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startDevProc starts `keel dev` with args in its own process group (killed
// with the test).
func startDevProc(t *testing.T, bin string, args ...string) *devProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"dev", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cleanKeelEnv(), "KEEL_LOG_LEVEL=info")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &devProc{cmd: cmd, out: &syncBuf{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-p.exited; p.exited <- nil })
	return p
}

func cleanKeelEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_") {
			env = append(env, kv)
		}
	}
	return env
}

// serving waits until the dev says it serves (true, with its URL from
// dataDir/url) or exits (false); the bound only guards against a hang.
func (p *devProc) serving(t *testing.T, dataDir string) (string, bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-p.exited:
			p.exited <- err
			return "", false
		default:
		}
		if strings.Contains(p.out.String(), "dev: serving on") {
			b, err := os.ReadFile(filepath.Join(dataDir, "url"))
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(string(b)), true
		}
	}
	t.Fatalf("keel dev neither served nor exited:\n%s", p.out)
	return "", false
}

// TestSecondDevThroughLinks is issue #32 item 2: a second keel dev that
// reaches a live one's database through a symlink, a hard link or a bind
// mount of its directory is refused before it opens the database, and
// the first goes on serving, its database intact.
func TestSecondDevThroughLinks(t *testing.T) {
	testbin.SkipShort(t, "builds keel and starts keel dev processes")
	bin, _ := binaries(t)
	dir1 := t.TempDir()
	first := startDevProc(t, bin, "--data-dir", dir1)
	url, ok := first.serving(t, dir1)
	if !ok {
		t.Fatalf("the first keel dev did not start:\n%s", first.out)
	}
	token, err := os.ReadFile(filepath.Join(dir1, "token"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir1, "keel.db")

	bound := func(t *testing.T) string {
		mnt := t.TempDir()
		if out, err := exec.Command("mount", "--bind", dir1, mnt).CombinedOutput(); err != nil {
			t.Skipf("cannot bind-mount here (needs root and mount permission): %v: %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
		return mnt
	}
	tests := []struct {
		name string
		// args of the second keel dev, given a fresh directory
		args func(t *testing.T, dir string) []string
	}{
		{"symlink to the database", func(t *testing.T, dir string) []string {
			link := filepath.Join(dir, "keel.db")
			if err := os.Symlink(db, link); err != nil {
				t.Fatal(err)
			}
			return []string{"--data-dir", dir}
		}},
		{"hard link to the database", func(t *testing.T, dir string) []string {
			link := filepath.Join(dir, "other.db")
			if err := os.Link(db, link); err != nil {
				t.Fatal(err)
			}
			return []string{"--data-dir", dir, "--store", "sqlite:" + link}
		}},
		{"bind mount, the database through it", func(t *testing.T, dir string) []string {
			return []string{"--data-dir", dir, "--store", "sqlite:" + filepath.Join(bound(t), "keel.db")}
		}},
		{"bind mount, the data directory through it", func(t *testing.T, dir string) []string {
			return []string{"--data-dir", bound(t)}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tc.args(t, dir)
			second := startDevProc(t, bin, args...)
			dataDir := args[1]
			before, _ := os.ReadFile(filepath.Join(dataDir, "url"))
			if _, ok := second.serving(t, dataDir); ok {
				t.Fatalf("a second keel dev started on the same database:\n%s", second.out)
			}
			err := <-second.exited
			second.exited <- err
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !strings.Contains(second.out.String(), "in use by another keel dev") {
				t.Fatalf("second keel dev: %v, want a refusal naming the other keel dev:\n%s", err, second.out)
			}
			if strings.Contains(second.out.String(), "ended leases") {
				t.Errorf("the second keel dev touched the first one's leases:\n%s", second.out)
			}
			for _, p := range []string{filepath.Join(dir, "keel.db-wal"), filepath.Join(dir, "other.db-wal")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("the second keel dev opened the database (%s exists)", p)
				}
			}
			if after, _ := os.ReadFile(filepath.Join(dataDir, "url")); string(after) != string(before) {
				t.Errorf("the second keel dev rewrote %s", filepath.Join(dataDir, "url"))
			}
			// The first is untouched: alive, serving, its database sound.
			req, _ := http.NewRequest("GET", url+"/v1/runs", nil)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("the first keel dev stopped answering: %v\n%s", err, first.out)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("the first keel dev answered %d", resp.StatusCode)
			}
		})
	}
	select {
	case err := <-first.exited:
		t.Fatalf("the first keel dev exited: %v\n%s", err, first.out)
	default:
	}
}
