// Package hostproxy is the only way out of a sandboxed command's private
// network namespace: an HTTP proxy, served by the worker on a Unix socket
// that the sandbox mounts, which lets a command reach the hosts of its
// allow-list and nothing else.
//
// It takes two kinds of request: CONNECT host:port (a tunnel, for HTTPS
// and anything else over TCP) and plain HTTP with an absolute http:// URI.
// The decision is made on the name in the request line, compared with the
// list as a string (lower case, trailing dot dropped): an IP literal passes
// only if that literal is on the list, a name only by name. The request
// goes to, and carries the Host of, exactly what was checked; a Host header
// that differs is ignored, as RFC 9112 says a proxy must. A name that
// passes is resolved by the worker, and the connection is refused if it
// resolves to a loopback, link-local (169.254.0.0/16 holds the cloud
// metadata and ECS credentials endpoints), unspecified or multicast
// address: only a literal on the list reaches those. Everything else is
// answered 403 with a message naming the host and the list.
//
// What it does not see: the bytes inside a tunnel. A host on the list that
// fronts for others (a CDN choosing the backend by TLS SNI) is reachable
// as a whole; allow such hosts knowingly.
package hostproxy
