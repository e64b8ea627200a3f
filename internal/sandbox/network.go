package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Where the way out appears inside the sandbox.
const (
	proxyDir  = "/run/keel/proxy" // the worker's proxy socket, bound read-only
	proxySock = "proxy.sock"
	socatBin  = "/run/keel/socat" // bound read-only, wherever the host keeps it
	// ProxyPort is the loopback port of the sandbox's forwarder; the
	// command's HTTP_PROXY and HTTPS_PROXY point at it.
	ProxyPort = 3128
	// forwarderFailed is the exit code of the wrapper when socat cannot
	// listen; with forwarderMark on stderr it becomes ErrSetup.
	forwarderFailed = 125
	forwarderMark   = "keel sandbox: the proxy forwarder (socat)"
)

// netExit is a command's way out when AllowHosts is set: the worker's
// proxy on a Unix socket in a private directory, which bwrap binds into
// the sandbox, where socat relays 127.0.0.1:ProxyPort to it. The command
// keeps its own network namespace, so this is its only route.
type netExit struct {
	px  *proxy
	dir string // host directory holding the socket
}

// openNetwork starts the proxy for one command under p.
func (s *Sandbox) openNetwork(ctx context.Context, p Policy) (*netExit, error) {
	if s.socat == "" {
		return nil, fmt.Errorf("%w: AllowHosts needs socat to reach the proxy from inside the sandbox, and socat was not found (Debian: apt-get install socat)", ErrSetup)
	}
	allow, err := parseAllowHosts(p.AllowHosts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "keel-proxy-")
	if err != nil {
		return nil, fmt.Errorf("%w: proxy directory: %w", ErrSetup, err)
	}
	n := &netExit{dir: dir}
	if err := s.prepareProxyDir(dir); err != nil {
		_ = n.Close()
		return nil, err
	}
	sock := filepath.Join(dir, proxySock)
	if n.px, err = serveProxy(ctx, sock, allow, nil); err != nil {
		_ = n.Close()
		return nil, err
	}
	// Only the sandbox's uid may connect: the socket is its, mode 0600.
	if err := s.giveSocket(sock); err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

// prepareProxyDir lets the sandbox uid (worker is root) reach the socket's
// directory, and no one else.
func (s *Sandbox) prepareProxyDir(dir string) error {
	if !s.asUser {
		return nil
	}
	if err := searchable(filepath.Dir(dir), s.cfg.UID); err != nil {
		return fmt.Errorf("%w: proxy directory %s: %w", ErrSetup, dir, err)
	}
	if err := os.Chown(dir, s.cfg.UID, s.cfg.GID); err != nil {
		return fmt.Errorf("%w: proxy directory: %w", ErrSetup, err)
	}
	return nil
}

func (s *Sandbox) giveSocket(sock string) error {
	if err := os.Chmod(sock, 0o600); err != nil {
		return fmt.Errorf("%w: proxy socket: %w", ErrSetup, err)
	}
	if s.asUser {
		if err := os.Chown(sock, s.cfg.UID, s.cfg.GID); err != nil {
			return fmt.Errorf("%w: proxy socket: %w", ErrSetup, err)
		}
	}
	return nil
}

// Close stops the proxy and removes its directory.
func (n *netExit) Close() error {
	var err error
	if n.px != nil {
		err = n.px.Close()
	}
	return errors.Join(err, os.RemoveAll(n.dir))
}

// bwrapArgs binds the socket and socat into the sandbox and points the
// proxy variables (both spellings: curl reads only the lower-case
// http_proxy) at the forwarder.
func (n *netExit) bwrapArgs(socat string) []string {
	url := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	a := []string{"--ro-bind", n.dir, proxyDir, "--ro-bind", socat, socatBin}
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		a = append(a, "--setenv", v, url)
	}
	return a
}

// wrap starts socat in the background and execs argv once socat listens.
// Readiness is read from /proc/net/tcp (a LISTEN entry on the port) rather
// than by connecting, which would open a proxy connection for nothing; a
// socat that dies first (zombie or gone) ends the wait with
// forwarderFailed instead of a hang until the wall time.
func wrap(argv []string) []string {
	port := fmt.Sprintf("%04X", ProxyPort)
	script := strings.Join([]string{
		fmt.Sprintf("%s TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:%s/%s </dev/null &",
			socatBin, ProxyPort, proxyDir, proxySock),
		"p=$!",
		fmt.Sprintf("until grep -q ':%s 00000000:0000 0A' /proc/net/tcp; do", port),
		`  st=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)`,
		fmt.Sprintf(`  if [ -z "$st" ] || [ "$st" = Z ]; then echo '%s did not start' >&2; exit %d; fi`, forwarderMark, forwarderFailed),
		"  sleep 0.01",
		"done",
		`exec "$@"`,
	}, "\n")
	return append([]string{"/bin/sh", "-c", script, "keel-net"}, argv...)
}

// searchable checks that uid can traverse every directory from dir up to
// the root (o+x; the sandbox uid owns none of them).
func searchable(dir string, uid int) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s (mode %o) is not searchable by sandbox uid %d", d, fi.Mode().Perm(), uid)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
