package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"
)

// proxy is the worker's HTTP proxy for one command: the only way out of
// the command's network namespace. It serves CONNECT and absolute-URI
// HTTP to the hosts of its allow-list and answers 403 to anything else.
// It lives as long as the command: Close ends every tunnel.
type proxy struct {
	allow  allowList
	ln     net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	tr     *http.Transport
	dialer net.Dialer
	lookup lookupFunc
	cancel context.CancelFunc
	served chan struct{}

	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]struct{}
}

// refusedHeader marks the proxy's own refusals, so a client (and a test)
// can tell them from an upstream's 403.
const refusedHeader = "X-Keel-Proxy"

// serveProxy listens on the Unix socket at path and serves until Close or
// until ctx ends. lookup resolves the names it dials (nil: the system's).
func serveProxy(ctx context.Context, path string, allow allowList, lookup lookupFunc) (*proxy, error) {
	if lookup == nil {
		lookup = systemLookup
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w: proxy socket: %w", ErrSetup, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	px := &proxy{allow: allow, ln: ln, lookup: lookup, cancel: cancel, served: make(chan struct{}), tunnels: map[net.Conn]struct{}{}}
	// Proxy: nil — the worker's own HTTP_PROXY must not become the
	// command's route; the allow-list is checked here, then we dial.
	px.tr = &http.Transport{Proxy: nil, DialContext: px.dial, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}
	px.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The URI's host was checked; the Host header goes with it,
			// whatever the client wrote.
			pr.Out.Host = ""
			pr.Out.Header.Add("Via", "1.1 keel-sandbox")
		},
		Transport: px.tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			dialFailed(w, r.URL.Host, err)
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	px.srv = &http.Server{
		Handler:           px,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: time.Minute, // a stalled client holds no goroutine past it
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(px.served)
		_ = px.srv.Serve(ln)
	}()
	return px, nil
}

// Close stops the listener (removing the socket), ends every request and
// tunnel, and waits for Serve to return.
func (px *proxy) Close() error {
	px.mu.Lock()
	px.closed = true
	for c := range px.tunnels {
		_ = c.Close()
	}
	px.mu.Unlock()
	px.cancel()
	err := px.srv.Close()
	px.tr.CloseIdleConnections()
	<-px.served
	return err
}

func (px *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port, err := target(r)
	if err != nil {
		reply(w, http.StatusBadRequest, "keel sandbox proxy: %v\n", err)
		return
	}
	if !px.allow.permits(host, port) {
		w.Header().Set(refusedHeader, "refused")
		reply(w, http.StatusForbidden, "keel sandbox proxy: %s is not on this command's allow-list (AllowHosts: %s)\n",
			net.JoinHostPort(host, port), px.allow)
		return
	}
	if r.Method == http.MethodConnect {
		px.tunnel(w, r, net.JoinHostPort(host, port))
		return
	}
	px.rp.ServeHTTP(w, r)
}

// target is the host:port the request line names — CONNECT's authority or
// the absolute URI's host — never the Host header, which a client may set
// to an allowed name while the request goes elsewhere. (net/http already
// ignores the Host header of an absolute-URI request; origin-form requests,
// which carry only a Host header, are refused.)
func target(r *http.Request) (host, port string, err error) {
	if r.URL.Host == "" {
		return "", "", errors.New("a proxy request names its target: CONNECT host:port, or an absolute http:// URI")
	}
	host, port = r.URL.Hostname(), r.URL.Port()
	switch {
	case r.Method == http.MethodConnect && port == "":
		return "", "", fmt.Errorf("CONNECT %s has no port", r.URL.Host)
	case r.Method == http.MethodConnect:
	case r.URL.Scheme != "http":
		return "", "", fmt.Errorf("scheme %q: only http:// is forwarded; https goes through CONNECT", r.URL.Scheme)
	case port == "":
		port = "80"
	}
	return host, port, nil
}

// tunnel dials addr, answers 200 and relays bytes both ways until either
// side closes or the proxy does.
func (px *proxy) tunnel(w http.ResponseWriter, r *http.Request, addr string) {
	up, err := px.dial(r.Context(), "tcp", addr)
	if err != nil {
		dialFailed(w, addr, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		reply(w, http.StatusInternalServerError, "keel sandbox proxy: cannot tunnel on this connection\n")
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	defer px.untrack(conn, up)
	if !px.track(conn, up) {
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, buf.Reader) // bytes the client sent early are in buf
		closeWrite(up)
	}()
	_, _ = io.Copy(conn, up)
	closeWrite(conn)
	<-done
}

// track registers a tunnel's connections for Close; false once closed.
func (px *proxy) track(cs ...net.Conn) bool {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.closed {
		return false
	}
	for _, c := range cs {
		px.tunnels[c] = struct{}{}
	}
	return true
}

func (px *proxy) untrack(cs ...net.Conn) {
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(px.tunnels, c)
	}
}

// closeWrite half-closes c so the other side sees EOF while its answer can
// still come back.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// dialFailed answers a request whose upstream could not be dialed: 403
// (the proxy's refusal) for an internal address, 502 otherwise.
func dialFailed(w http.ResponseWriter, addr string, err error) {
	if errors.Is(err, errInternalAddr) {
		w.Header().Set(refusedHeader, "refused")
		reply(w, http.StatusForbidden, "keel sandbox proxy: %v\n", err)
		return
	}
	reply(w, http.StatusBadGateway, "keel sandbox proxy: %s: %v\n", addr, err)
}

func reply(w http.ResponseWriter, code int, format string, a ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(code)
	fmt.Fprintf(w, format, a...)
}
