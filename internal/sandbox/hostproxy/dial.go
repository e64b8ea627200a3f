package hostproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// RefusedError: the destination is not one a command may reach.
type RefusedError struct {
	Target string // host:port as requested
	Why    string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("hostproxy: %s %s", e.Target, e.Why) }

// dialer connects to a checked host:port. It checks again (the plain
// HTTP path dials through a Transport) and refuses a name that resolves
// to an address only a listed literal may reach.
type dialer struct {
	allow AllowList
}

func (d dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !d.allow.Allows(host, port) {
		return nil, &RefusedError{Target: addr, Why: "is not on this command's allow-list"}
	}
	literal := net.ParseIP(normalize(host)) != nil
	nd := net.Dialer{Timeout: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if literal {
			return nil
		}
		h, _, err := net.SplitHostPort(address)
		if ip := net.ParseIP(h); err != nil || ip == nil || special(ip) {
			return &RefusedError{Target: addr, Why: "resolves to " + h + ", an address a name may not reach: allow the IP literal itself"}
		}
		return nil
	}}
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return c, nil
}

// special: loopback (the worker's own services), link-local (cloud
// metadata, the ECS credentials endpoint), unspecified and multicast.
func special(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast()
}

// relay copies both ways between the client and the destination until
// both sides are done or ctx ends, passing on half-closes.
func relay(ctx context.Context, client net.Conn, fromClient io.Reader, up net.Conn) {
	stop := context.AfterFunc(ctx, func() {
		_ = client.Close()
		_ = up.Close()
	})
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, fromClient)
		closeWrite(up)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(client, up)
		closeWrite(client)
	}()
	wg.Wait()
	_ = client.Close()
	_ = up.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = c.Close()
	}
}
