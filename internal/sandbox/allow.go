package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// hostRule is one AllowHosts entry.
type hostRule struct {
	host     string // lower case, no trailing dot, IPv6 without brackets
	wildcard bool   // "*.example.com": names under example.com, not example.com itself
	port     int    // 0: any port
}

// allowList is a command's parsed AllowHosts.
type allowList []hostRule

// parseAllowHosts validates AllowHosts entries: "host", "host:port",
// "*.domain", "*.domain:port", "[v6]:port" or a bare IPv6 address. A URL, a
// path or a lone "*" is refused rather than guessed at, so that a typo
// opens neither more nor less than was meant.
func parseAllowHosts(list []string) (allowList, error) {
	a := make(allowList, 0, len(list))
	for _, e := range list {
		r, err := parseHostRule(e)
		if err != nil {
			return nil, fmt.Errorf("%w: AllowHosts entry %q: %w", ErrSetup, e, err)
		}
		a = append(a, r)
	}
	return a, nil
}

// CheckAllowHosts returns the error Run would return for the list's first
// bad entry, so a program can refuse it at startup rather than at its
// first command.
func CheckAllowHosts(list []string) error {
	_, err := parseAllowHosts(list)
	return err
}

func parseHostRule(e string) (hostRule, error) {
	s := strings.TrimSpace(e)
	if s == "" || strings.ContainsAny(s, "/@?#% \t") {
		return hostRule{}, errors.New("want a host with an optional :port, not a URL")
	}
	var r hostRule
	host := s
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return hostRule{}, err
		}
		if r.port = parsePort(p); r.port == 0 {
			return hostRule{}, fmt.Errorf("port %q is not in 1-65535", p)
		}
		host = h
	}
	r.host = normHost(host)
	if rest, ok := strings.CutPrefix(r.host, "*."); ok {
		r.host, r.wildcard = rest, true
	}
	if r.host == "" || strings.Contains(r.host, "*") {
		return hostRule{}, errors.New("want an exact host or *.domain")
	}
	return r, nil
}

// normHost makes names compare as DNS does: case-insensitive, with or
// without the root's trailing dot.
func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")), ".")
}

// parsePort returns 0 for anything but a port number 1-65535, so "0443"
// and "443" are the same port and garbage matches no rule.
func parsePort(p string) int {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0
	}
	return n
}

// permits reports whether a request may reach host:port.
func (a allowList) permits(host, port string) bool {
	host, n := normHost(host), parsePort(port)
	if host == "" || n == 0 {
		return false
	}
	for _, r := range a {
		if r.port != 0 && r.port != n {
			continue
		}
		if !r.wildcard && host == r.host || r.wildcard && !isIP(host) && strings.HasSuffix(host, "."+r.host) {
			return true
		}
	}
	return false
}

// isIP: a wildcard names DNS names under a domain, never an address
// ("*.0.0.1" does not match 127.0.0.1).
func isIP(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

func (a allowList) String() string {
	s := make([]string, len(a))
	for i, r := range a {
		h := r.host
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		if r.wildcard {
			h = "*." + h
		}
		if r.port != 0 {
			h += ":" + strconv.Itoa(r.port)
		}
		s[i] = h
	}
	return strings.Join(s, ", ")
}
