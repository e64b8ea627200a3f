package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

func TestAllowList(t *testing.T) {
	a, err := parseAllowHosts([]string{"Example.COM", "*.svc.example.org", "api.test:8443", "127.0.0.1:8080", "[::1]:9000", "::2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, port string
		want       bool
	}{
		{"example.com", "443", true},
		{"EXAMPLE.com.", "80", true},
		{"www.example.com", "443", false}, // exact means exact
		{"a.svc.example.org", "443", true},
		{"a.b.svc.example.org", "80", true},
		{"svc.example.org", "443", false}, // *.domain is below the domain only
		{"evilsvc.example.org", "443", false},
		{"svc.example.org.evil.com", "443", false},
		{"api.test", "8443", true},
		{"api.test", "443", false},
		{"127.0.0.1", "8080", true},
		{"127.0.0.1", "08080", true},
		{"127.0.0.1", "8081", false},
		{"localhost", "8080", false}, // names are compared, not resolved
		{"::1", "9000", true},
		{"::2", "1", true},
		{"example.com", "0", false},
		{"example.com", "x", false},
		{"", "80", false},
	} {
		if got := a.permits(tc.host, tc.port); got != tc.want {
			t.Errorf("permits(%q, %q) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	for _, bad := range []string{"", "*", "*.", "https://example.com", "example.com/path", "user@example.com", "example.com:0", "example.com:99999", "a.*.com", "[::1"} {
		if _, err := parseAllowHosts([]string{bad}); err == nil {
			t.Errorf("parseAllowHosts(%q) accepted it", bad)
		}
	}
}

// startTestProxy serves a proxy on a socket in a temporary directory.
func startTestProxy(t *testing.T, allow ...string) (*proxy, string) {
	t.Helper()
	return startProxyResolving(t, nil, allow...)
}

// startProxyResolving is startTestProxy with names resolved from a table.
func startProxyResolving(t *testing.T, names map[string]string, allow ...string) (*proxy, string) {
	t.Helper()
	a, err := parseAllowHosts(allow)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "p.sock")
	var lookup lookupFunc
	if names != nil {
		lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
			ip, ok := names[host]
			if !ok {
				return nil, fmt.Errorf("no such host %s", host)
			}
			return []netip.Addr{netip.MustParseAddr(ip)}, nil
		}
	}
	px, err := serveProxy(ctx, sock, a, lookup)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	return px, sock
}

// rawRequest writes req on a new connection to the proxy and returns the
// response and the connection (for a tunnel).
func rawRequest(t *testing.T, sock, req string) (*http.Response, string, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("response to %q: %v", req, err)
	}
	if strings.HasPrefix(req, "CONNECT") && resp.StatusCode == http.StatusOK {
		return resp, "", c, br
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body), c, br
}

// TestProxyChecksTheRequestLine: the target is the CONNECT authority or the
// absolute URI's host; a Host header naming an allowed host does not open
// another, and an origin-form request (Host header only) is refused.
func TestProxyChecksTheRequestLine(t *testing.T) {
	hits := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.Host
		fmt.Fprintf(w, "upstream host=%s via=%s", r.Host, r.Header.Get("Via"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	_, deny := startTestProxy(t, "allowed.example")
	resp, body, _, _ := rawRequest(t, deny, "GET "+srv.URL+"/ HTTP/1.1\r\nHost: allowed.example\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get(refusedHeader) == "" || !strings.Contains(body, addr+" is not on this command's allow-list") {
		t.Errorf("absolute URI to an unlisted host with an allowed Host header: %d %q", resp.StatusCode, body)
	}
	resp, body, _, _ = rawRequest(t, deny, "GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "absolute http:// URI") {
		t.Errorf("origin-form request: %d %q", resp.StatusCode, body)
	}
	resp, _, _, _ = rawRequest(t, deny, "CONNECT "+addr+" HTTP/1.1\r\nHost: allowed.example:443\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get(refusedHeader) == "" {
		t.Errorf("CONNECT to an unlisted host: %d", resp.StatusCode)
	}
	if len(hits) != 0 {
		t.Fatalf("the server was reached %d times through a refusing proxy", len(hits))
	}

	_, allow := startTestProxy(t, "127.0.0.1")
	resp, body, _, _ = rawRequest(t, allow, "GET "+srv.URL+"/ HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != "upstream host="+addr+" via=1.1 keel-sandbox" {
		t.Errorf("allowed absolute URI: %d %q, want the URI's host upstream and a Via", resp.StatusCode, body)
	}
	resp, body, _, _ = rawRequest(t, allow, "GET https://"+addr+"/ HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "CONNECT") {
		t.Errorf("https:// absolute URI: %d %q, want 400 pointing at CONNECT", resp.StatusCode, body)
	}
}

// TestProxyCloseEndsTunnels: a tunnel open when the proxy closes (the
// command has ended) is cut, and nothing more can connect.
func TestProxyCloseEndsTunnels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "through the tunnel")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	px, sock := startTestProxy(t, "127.0.0.1")
	resp, _, c, br := rawRequest(t, sock, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(io.LimitReader(inner.Body, int64(len("through the tunnel")))); string(b) != "through the tunnel" {
		t.Fatalf("through the tunnel: %q", b)
	}
	if err := px.Close(); err != nil {
		t.Fatal(err)
	}
	// The server keeps its side alive (keep-alive), so only the proxy's
	// Close can end this read.
	if n, err := br.Read(make([]byte, 1)); err == nil {
		t.Fatalf("tunnel still open after Close (%d bytes)", n)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		_ = c.Close()
		t.Fatal("the proxy socket still accepts after Close")
	}
}
