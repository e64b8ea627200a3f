package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// errInternalAddr marks a listed name that resolves to an address of the
// worker's own host or link: the proxy does not dial it.
var errInternalAddr = errors.New("resolves to an address of the worker's host or link")

// lookupFunc resolves a host name to its addresses; tests replace the
// system resolver with a table.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func systemLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// imdsV6 is the instance metadata service's IPv6 address on EC2 (Nitro):
// a unique-local address, so the link-local test alone misses it.
var imdsV6 = netip.MustParseAddr("fd00:ec2::254")

// internal reports an address that reaches the worker rather than the
// world: loopback (the worker's own services), link-local (the cloud's
// instance metadata at 169.254.169.254 and the container credential
// endpoint at 169.254.170.2), unspecified and multicast.
func internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || ip == imdsV6
}

// reachable decides whether a listed host may be dialed at ip. A name on
// the allow-list vouches for the service it names, not for whatever its
// DNS answers: a name that resolves to an internal address (a rebinding
// trick, or a mistake) is refused. An internal address is dialed only when
// the allow-list names that address itself, or names localhost and the
// address is loopback — the operator wrote it down.
func (a allowList) reachable(host string, ip netip.Addr) error {
	if !internal(ip) {
		return nil
	}
	h := normHost(host)
	lit, err := netip.ParseAddr(h)
	for _, r := range a {
		if r.wildcard || r.host != h {
			continue
		}
		if err == nil && lit.Unmap() == ip.Unmap() || h == "localhost" && ip.Unmap().IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is %s; list that address in AllowHosts to reach it", errInternalAddr, host, ip)
}

// dial connects to addr (whose host the allow-list permits) at the first
// address it resolves to that reachable allows. The proxy resolves the
// name itself and dials the address it checked, so a DNS answer cannot
// change between the check and the connection.
func (px *proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, perr := netip.ParseAddr(normHost(host)); perr == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = px.lookup(ctx, host); err != nil {
		return nil, err
	}
	err = fmt.Errorf("%s has no address", host)
	for _, ip := range ips {
		if rerr := px.allow.reachable(host, ip); rerr != nil {
			err = rerr
			continue
		}
		c, derr := px.dialer.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if derr == nil {
			return c, nil
		}
		err = derr
	}
	return nil, err
}
