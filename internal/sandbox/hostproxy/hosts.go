package hostproxy

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// AllowList is a parsed list of hosts. The zero AllowList allows nothing.
type AllowList struct {
	rules []rule
	text  []string
}

// rule is one entry: a host (or, wildcard, a domain's subdomains) and a
// port ("" for any).
type rule struct {
	host     string
	wildcard bool
	port     string
}

// Parse reads entries of the form host, host:port, *.domain,
// *.domain:port, an IPv4 literal, or an IPv6 literal ("::1" or "[::1]:8080").
// "*.example.com" matches every name under example.com but not
// example.com itself; an entry without a port allows any port. Anything
// else (a URL, a path, a lone "*", a wildcard inside a name) is an error,
// so a typo never opens more than was meant.
func Parse(entries []string) (AllowList, error) {
	var l AllowList
	for _, e := range entries {
		r, err := parseRule(e)
		if err != nil {
			return AllowList{}, fmt.Errorf("allowed host %q: %w", e, err)
		}
		l.rules = append(l.rules, r)
		l.text = append(l.text, e)
	}
	return l, nil
}

func parseRule(e string) (rule, error) {
	if e == "" || strings.ContainsAny(e, "/ \t@?#") {
		return rule{}, fmt.Errorf("want host, host:port or *.domain, not a URL")
	}
	host, port := e, ""
	if h, p, err := net.SplitHostPort(e); err == nil {
		host, port = h, p
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return rule{}, fmt.Errorf("port %q is not 1 to 65535", p)
		}
	} else if strings.HasPrefix(e, "[") {
		return rule{}, fmt.Errorf("bracketed IPv6 literal needs a port: %w", err)
	}
	r := rule{port: port}
	if d, ok := strings.CutPrefix(host, "*."); ok {
		r.wildcard, host = true, d
	}
	r.host = normalize(host)
	switch {
	case r.host == "":
		return rule{}, fmt.Errorf("empty host")
	case strings.Contains(r.host, "*"):
		return rule{}, fmt.Errorf("a wildcard only as a leading *.")
	case r.wildcard && net.ParseIP(r.host) != nil:
		return rule{}, fmt.Errorf("a wildcard over an IP address")
	case net.ParseIP(r.host) == nil && !validName(r.host):
		return rule{}, fmt.Errorf("not a host name")
	}
	return r, nil
}

func validName(h string) bool {
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return !strings.HasPrefix(h, ".") && !strings.Contains(h, "..")
}

// normalize is the one form a host is compared in: lower case, no
// trailing dot, no IPv6 brackets, an IP in its canonical text.
func normalize(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// Allows reports whether host:port is on the list. An IP literal matches
// only an entry with the same literal, never a wildcard.
func (l AllowList) Allows(host, port string) bool {
	host = normalize(host)
	if host == "" {
		return false
	}
	ip := net.ParseIP(host) != nil
	for _, r := range l.rules {
		if r.port != "" && r.port != port {
			continue
		}
		if (!r.wildcard && host == r.host) || (r.wildcard && !ip && strings.HasSuffix(host, "."+r.host)) {
			return true
		}
	}
	return false
}

// Empty reports whether the list allows nothing.
func (l AllowList) Empty() bool { return len(l.rules) == 0 }

// String is the list as given, for messages.
func (l AllowList) String() string { return strings.Join(l.text, ", ") }
