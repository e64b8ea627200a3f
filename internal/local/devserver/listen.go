package devserver

import (
	"fmt"
	"net"
	"sync"
)

// CheckAddr refuses a listen address that is not loopback unless
// allowRemote: keel dev speaks plain HTTP with one bearer token. Start
// calls it; the CLI calls it first, to refuse before opening anything.
func CheckAddr(addr string, allowRemote bool) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("addr %q: want HOST:PORT", addr)
	}
	if allowRemote || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("addr %q is not a loopback address: keel dev serves plain HTTP guarded by one bearer token; "+
		"use 127.0.0.1 (or pass --allow-remote to expose it anyway)", addr)
}

// isLoopback reports whether addr's host is localhost or a loopback IP.
// An empty host or 0.0.0.0 / :: listen on every interface: not loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// limitListener accepts at most n connections at a time: Accept blocks
// while n are open, so further clients wait in the kernel's backlog
// instead of costing a file descriptor and a goroutine each.
func limitListener(l net.Listener, n int) net.Listener {
	return &capListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type capListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &capConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *capListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type capConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
