package sandbox

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// TestReachable: a listed name never leads to the worker's own host or
// link (loopback, the metadata and container-credential endpoints), an
// address listed as such does, and a wildcard never matches an address.
func TestReachable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow []string
		host  string
		ip    string
		ok    bool
	}{
		{"a name at a public address", []string{"api.example.com"}, "api.example.com", "93.184.216.34", true},
		{"a name at a private address", []string{"db.corp"}, "db.corp", "10.0.3.7", true},
		{"a name at loopback", []string{"api.example.com"}, "api.example.com", "127.0.0.1", false},
		{"a name at IPv6 loopback", []string{"api.example.com"}, "api.example.com", "::1", false},
		{"a name at mapped loopback", []string{"api.example.com"}, "api.example.com", "::ffff:127.0.0.1", false},
		{"a name at the EC2 metadata service", []string{"*.example.com"}, "x.example.com", "169.254.169.254", false},
		{"a name at the ECS credential endpoint", []string{"creds.example.com"}, "creds.example.com", "169.254.170.2", false},
		{"a name at the EC2 metadata service over IPv6", []string{"api.example.com"}, "api.example.com", "fd00:ec2::254", false},
		{"a name at 0.0.0.0", []string{"api.example.com"}, "api.example.com", "0.0.0.0", false},
		{"loopback listed as an address", []string{"127.0.0.1:8080"}, "127.0.0.1", "127.0.0.1", true},
		{"the credential endpoint listed as an address", []string{"169.254.170.2"}, "169.254.170.2", "169.254.170.2", true},
		{"localhost listed", []string{"localhost"}, "localhost", "127.0.0.1", true},
		{"localhost listed, answered link-local", []string{"localhost"}, "localhost", "169.254.169.254", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseAllowHosts(tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			err = a.reachable(tc.host, netip.MustParseAddr(tc.ip))
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, errInternalAddr) {
				t.Errorf("reachable(%s at %s) = %v, want ok=%v", tc.host, tc.ip, err, tc.ok)
			}
		})
	}
	a, _ := parseAllowHosts([]string{"*.0.0.1"})
	if a.permits("127.0.0.1", "80") {
		t.Error("*.0.0.1 permits 127.0.0.1: a wildcard matched an address")
	}
}

// TestProxyRefusesNamesAtInternalAddresses: a listed name that resolves to
// loopback (where a real server answers) is refused with the proxy's 403,
// over http:// and CONNECT, and the server sees nothing; the same server
// listed by its address is reached. The control shows the refusal is the
// proxy's, not a missing server.
func TestProxyRefusesNamesAtInternalAddresses(t *testing.T) {
	hits := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.URL.Path
		fmt.Fprint(w, netCanary)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	port := addr[strings.LastIndex(addr, ":")+1:]
	names := map[string]string{"svc.example.com": "127.0.0.1"}

	_, sock := startProxyResolving(t, names, "svc.example.com")
	resp, body, _, _ := rawRequest(t, sock, "GET http://svc.example.com:"+port+"/named HTTP/1.1\r\nHost: svc.example.com\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get(refusedHeader) == "" || !strings.Contains(body, "127.0.0.1") {
		t.Errorf("http:// to a name at loopback: %d %q", resp.StatusCode, body)
	}
	resp, body, _, _ = rawRequest(t, sock, "CONNECT svc.example.com:"+port+" HTTP/1.1\r\nHost: svc.example.com:"+port+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get(refusedHeader) == "" {
		t.Errorf("CONNECT to a name at loopback: %d %q", resp.StatusCode, body)
	}
	select {
	case p := <-hits:
		t.Fatalf("the server behind a refused name was reached (%s)", p)
	default:
	}

	_, sock = startProxyResolving(t, names, addr)
	resp, body, _, _ = rawRequest(t, sock, "GET "+srv.URL+"/listed HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != netCanary || <-hits != "/listed" {
		t.Errorf("control, the address listed: %d %q", resp.StatusCode, body)
	}
}
