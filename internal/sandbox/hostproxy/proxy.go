package hostproxy

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

// Proxy serves one allow-list. It is safe for concurrent use.
type Proxy struct {
	allow AllowList
	dial  dialer
	fwd   *httputil.ReverseProxy
	tr    *http.Transport

	mu      sync.Mutex
	refused []string
}

// New returns a proxy for allow.
func New(allow AllowList) *Proxy {
	p := &Proxy{allow: allow, dial: dialer{allow: allow}}
	p.tr = &http.Transport{Proxy: nil, DialContext: p.dial.DialContext, ForceAttemptHTTP2: false,
		MaxIdleConns: 16, IdleConnTimeout: 30 * time.Second}
	p.fwd = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The outgoing request goes to the URL that was checked and
			// carries its host, whatever Host header came in.
			pr.Out.Host = ""
			pr.Out.Header.Add("Via", "1.1 keel-sandbox")
		},
		Transport:    p.tr,
		ErrorHandler: p.upstreamError,
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	return p
}

// Serve answers requests on l until ctx ends, then closes l and every
// connection it accepted, tunnels included. It returns nil when ctx ended.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           p,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	err := srv.Serve(l)
	p.tr.CloseIdleConnections()
	if ctx.Err() != nil && errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("hostproxy: serve: %w", err)
}

// Refused returns the host:port of each refused request, in order, for
// the command's record.
func (p *Proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// ServeHTTP takes CONNECT and absolute http:// requests; see the package
// doc.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "keel sandbox proxy: send CONNECT host:port, or an absolute http:// URI (set HTTP_PROXY/HTTPS_PROXY)", http.StatusBadRequest)
		return
	}
	host, port := r.URL.Hostname(), r.URL.Port()
	if port == "" {
		port = "80"
	}
	if !p.allow.Allows(host, port) {
		p.refuse(w, net.JoinHostPort(host, port), "is not on this command's allow-list")
		return
	}
	r.Header.Del("Proxy-Authorization")
	p.fwd.ServeHTTP(w, r)
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.URL.Host)
	if err != nil || r.URL.Host != r.RequestURI {
		http.Error(w, "keel sandbox proxy: CONNECT takes host:port", http.StatusBadRequest)
		return
	}
	target := net.JoinHostPort(host, port)
	if !p.allow.Allows(host, port) {
		p.refuse(w, target, "is not on this command's allow-list")
		return
	}
	up, err := p.dial.DialContext(r.Context(), "tcp", target)
	if err != nil {
		p.upstreamError(w, r, err)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		http.Error(w, "keel sandbox proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = up.Close()
		_ = conn.Close()
		return
	}
	relay(r.Context(), conn, buf.Reader, up)
}

// upstreamError answers a request whose destination could not be reached:
// 403 when the dialer refused the address, 502 otherwise.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var re *RefusedError
	if errors.As(err, &re) {
		p.refuse(w, re.Target, re.Why)
		return
	}
	http.Error(w, fmt.Sprintf("keel sandbox proxy: %s: %v", r.URL.Host, err), http.StatusBadGateway)
}

func (p *Proxy) refuse(w http.ResponseWriter, target, why string) {
	p.mu.Lock()
	p.refused = append(p.refused, target)
	p.mu.Unlock()
	w.Header().Set("X-Keel-Refused", target)
	http.Error(w, fmt.Sprintf("keel sandbox: %s %s (allowed: %s)", target, why, p.allow), http.StatusForbidden)
}
