package awslocal

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

//go:embed launcher/moto_rie.py
var launcherPy []byte

// Moto is a moto server started by StartMoto: loopback only, requests
// serialized, Step Functions executing, Lambda invocations routed to the
// function processes in its routing file.
type Moto struct {
	URL string

	cmd    *exec.Cmd
	routes string
	mu     sync.Mutex
	route  map[string]string
}

// MotoAvailable says why moto cannot run here, or "".
func MotoAvailable(python string) string {
	out, err := exec.Command(python, "-c", "import moto, werkzeug; print(moto.__version__)").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s with moto[server] is missing (%v: %s)", python, err, firstLine(out))
	}
	return ""
}

// StartMoto starts the launcher in dir (its log goes to dir/moto.log) and
// waits until it answers.
func StartMoto(ctx context.Context, python, dir string) (*Moto, error) {
	script := filepath.Join(dir, "moto_rie.py")
	if err := os.WriteFile(script, launcherPy, 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	m := &Moto{URL: fmt.Sprintf("http://127.0.0.1:%d", port), routes: filepath.Join(dir, "functions.json"), route: map[string]string{}}
	if err := m.writeRoutes(); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "moto.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	m.cmd = exec.Command(python, script, fmt.Sprint(port))
	m.cmd.Env = append(os.Environ(), "AWSLOCAL_FUNCTIONS="+m.routes, "PYTHONUNBUFFERED=1")
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("awslocal: start moto: %w", err)
	}
	if err := waitHTTP(ctx, m.URL+"/moto-api/", 60*time.Second); err != nil {
		m.Close()
		return nil, fmt.Errorf("awslocal: moto did not come up (see %s): %w", logf.Name(), err)
	}
	return m, nil
}

// Route points invocations of function (its name) at an emulator's URL;
// "" removes it.
func (m *Moto) Route(function, url string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if url == "" {
		delete(m.route, function)
	} else {
		m.route[function] = url
	}
	return m.writeRoutes()
}

func (m *Moto) writeRoutes() error {
	b, err := json.Marshal(m.route)
	if err != nil {
		return err
	}
	tmp := m.routes + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, m.routes)
}

// Close stops moto (its whole process group).
func (m *Moto) Close() {
	if m.cmd != nil && m.cmd.Process != nil {
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		_ = m.cmd.Wait()
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls url until it answers anything below 500.
func waitHTTP(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}
