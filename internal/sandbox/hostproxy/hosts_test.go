package hostproxy

import "testing"

func TestParseRefuses(t *testing.T) {
	for _, e := range []string{"", "*", "https://example.com", "example.com/path", "*.", "a.*.com", "ex ample.com",
		"example.com:0", "example.com:99999", "example.com:http", "*.127.0.0.1", "[::1]", "user@example.com", "a..b", ".a.com"} {
		if _, err := Parse([]string{e}); err == nil {
			t.Errorf("Parse(%q) = nil error", e)
		}
	}
}

func TestAllows(t *testing.T) {
	l, err := Parse([]string{"Example.COM", "*.svc.example.org", "api.example.net:8443", "127.0.0.1", "::1", "[fe80::1]:80"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, host, port string
		want             bool
	}{
		{"exact, any port", "example.com", "443", true},
		{"case and trailing dot", "EXAMPLE.com.", "80", true},
		{"subdomain of an exact entry", "www.example.com", "443", false},
		{"suffix trick", "evilexample.com", "443", false},
		{"wildcard subdomain", "a.svc.example.org", "443", true},
		{"wildcard deeper", "a.b.svc.example.org", "443", true},
		{"wildcard not the domain itself", "svc.example.org", "443", false},
		{"wildcard suffix trick", "evilsvc.example.org", "443", false},
		{"port given, matching", "api.example.net", "8443", true},
		{"port given, other", "api.example.net", "443", false},
		{"IP literal listed", "127.0.0.1", "8080", true},
		{"IP literal not listed", "127.0.0.2", "8080", false},
		{"IPv6 listed", "[::1]", "80", true},
		{"IPv6 with port", "fe80::1", "80", true},
		{"IPv6 other port", "fe80::1", "81", false},
		{"v4-mapped v6 of a listed v4", "::ffff:127.0.0.1", "80", true},
		{"a name is not its address", "localhost", "80", false},
		{"empty", "", "80", false},
	} {
		if got := l.Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("%s: Allows(%q, %q) = %v, want %v", tc.name, tc.host, tc.port, got, tc.want)
		}
	}
	if (AllowList{}).Allows("example.com", "443") {
		t.Error("the zero AllowList allows a host")
	}
}
