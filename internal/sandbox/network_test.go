package sandbox

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const netCanary = "canary-allow-3e9d"

// TestAllowHosts runs curl in the sandbox against loopback servers of the
// host under several allow-lists. Each case runs twice: isolated, where it
// must see what the case says, and unsafe, where the server must answer —
// so a refusal in the sandbox is the proxy's or the namespace's doing, not
// a missing server. A case that reaches the server must show the proxy's
// Via header: the request went through the proxy, not around it.
func TestAllowHosts(t *testing.T) {
	for _, v := range []string{"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"} {
		t.Setenv(v, "") // the unsafe control must go straight to the server
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed by the network probes")
	}
	needSocat(t)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s via=%q\n", netCanary, r.Header.Get("Via"))
	})
	srv := httptest.NewServer(handler)
	defer srv.Close()
	tls := httptest.NewTLSServer(handler)
	defer tls.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	tlsAddr := strings.TrimPrefix(tls.URL, "https://")
	port := addr[strings.LastIndex(addr, ":")+1:]

	const curl = "curl -sS -i --max-time 10 "
	cases := []struct {
		name, script string
		allow        []string
		reach        bool   // isolated: the server answers
		want         string // isolated: the output holds this
	}{
		{"network off", curl + srv.URL, nil, false, ""},
		{"host allowed", curl + srv.URL, []string{"127.0.0.1"}, true, `via="1.1 keel-sandbox"`},
		{"host:port allowed", curl + srv.URL, []string{addr}, true, `via="1.1 keel-sandbox"`},
		{"localhost:port allowed", curl + "http://localhost:" + port, []string{"localhost:" + port}, true, `via="1.1 keel-sandbox"`},
		{"https through CONNECT", curl + "-k " + tls.URL, []string{tlsAddr}, true, netCanary},
		{"host allowed, proxy bypassed", curl + "--noproxy '*' " + srv.URL, []string{"127.0.0.1"}, false, "Failed to connect"},
		{"another host allowed", curl + srv.URL, []string{"api.example.com"}, false, "403 Forbidden"},
		{"another port allowed", curl + srv.URL, []string{"127.0.0.1:1"}, false, "is not on this command's allow-list"},
		{"Host header names an allowed host", curl + "-H 'Host: api.example.com' " + srv.URL, []string{"api.example.com"}, false, refusedHeader + ": refused"},
		{"https to another host", curl + "-k " + tls.URL, []string{"*.example.com"}, false, "CONNECT tunnel failed, response 403"},
	}
	f := newFixture(t)
	for _, mode := range []struct {
		name   string
		unsafe bool
	}{{"isolated", false}, {"unsafe", true}} {
		s := newSandbox(t, mode.unsafe)
		for _, tc := range cases {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				res, err := s.Run(ctx, f.ws, sh(tc.script), Policy{AllowHosts: tc.allow})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				out := string(res.Stdout) + string(res.Stderr)
				reach := mode.unsafe || tc.reach
				if got := strings.Contains(out, netCanary); got != reach {
					t.Errorf("reached the server = %v, want %v; output:\n%s", got, reach, out)
				}
				if !mode.unsafe && !strings.Contains(out, tc.want) {
					t.Errorf("output lacks %q:\n%s", tc.want, out)
				}
			})
		}
	}
}

// TestAllowHostsNeedsSocat: without socat a policy with AllowHosts is
// refused, naming socat, and Isolation reports it; without AllowHosts
// commands still run.
func TestAllowHostsNeedsSocat(t *testing.T) {
	newSandbox(t, false) // skips without bwrap
	s, err := New(ctx, Config{Socat: "/nonexistent/socat"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	_, err = s.Run(ctx, f.ws, sh("true"), Policy{AllowHosts: []string{"example.com"}})
	if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "socat") {
		t.Errorf("Run with AllowHosts and no socat = %v, want ErrSetup naming socat", err)
	}
	if res, err := s.Run(ctx, f.ws, sh("echo fine"), Policy{}); err != nil || string(res.Stdout) != "fine\n" {
		t.Errorf("Run without network = %q, %v", res.Stdout, err)
	}
	if gaps := strings.Join(s.Isolation().Gaps, "\n"); !strings.Contains(gaps, "socat") {
		t.Errorf("Isolation gaps %q do not name socat", gaps)
	}
	if _, err := exec.LookPath("socat"); err == nil {
		iso := newSandbox(t, false).Isolation()
		if len(iso.Gaps) != 0 || !strings.Contains(strings.Join(iso.Facts, "\n"), "proxy") {
			t.Errorf("with socat, Isolation = %+v, want no gap and the proxy among the facts", iso)
		}
	}
}

// TestAllowHostsRefusesBadEntries: an entry that is not a host is an error,
// not a guess.
func TestAllowHostsRefusesBadEntries(t *testing.T) {
	s := newSandbox(t, false)
	f := newFixture(t)
	_, err := s.Run(ctx, f.ws, sh("true"), Policy{AllowHosts: []string{"https://example.com/"}})
	if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "AllowHosts entry") {
		t.Errorf("Run with a URL in AllowHosts = %v, want ErrSetup", err)
	}
}

// TestProxyEndsWithTheCommand: once Run returns, the proxy's socket and
// directory are gone (TestProxyCloseEndsTunnels shows Close cuts tunnels).
func TestProxyEndsWithTheCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, netCanary)
	}))
	defer srv.Close()
	s := newSandbox(t, false)
	needSocat(t)
	f := newFixture(t)
	tmp := filepath.Join(f.base, "tmp")
	if err := os.Mkdir(tmp, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	res, err := s.Run(ctx, f.ws, sh("curl -s "+srv.URL), Policy{AllowHosts: []string{"127.0.0.1"}})
	if err != nil || !strings.Contains(string(res.Stdout), netCanary) {
		t.Fatalf("Run: %v, out %q err %q", err, res.Stdout, res.Stderr)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the proxy outlived its command: %s holds %v", tmp, left)
	}
}

// TestForwarderFailureIsSetup: a socat that exits instead of listening
// (/bin/false stands in for it) ends the command before it starts, as
// ErrSetup naming the forwarder, not as the command's own exit code.
func TestForwarderFailureIsSetup(t *testing.T) {
	newSandbox(t, false) // skips without bwrap
	s, err := New(ctx, Config{Socat: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	res, err := s.Run(ctx, f.ws, sh("echo RAN"), Policy{AllowHosts: []string{"example.com"}})
	if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "forwarder") {
		t.Errorf("Run with a failing forwarder = %v, want ErrSetup naming the forwarder", err)
	}
	if strings.Contains(string(res.Stdout), "RAN") {
		t.Error("the command ran without its forwarder")
	}
}
