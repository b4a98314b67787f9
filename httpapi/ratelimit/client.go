package ratelimit

import (
	"net/netip"
	"strings"
)

// maxClientKey bounds the key of a client address that is not an IP
// address (what a misconfigured proxy header may hold).
const maxClientKey = 64

// ClientKey returns the key under which every limit per client address
// counts the address addr (as a ClientIP function returns it): an IPv4
// address (also one written as IPv4-mapped IPv6) stands for itself, and
// an IPv6 address for its /64 network, the least a single subscriber is
// given, so that one client cannot step around a limit by walking its
// own network's addresses. A port ("192.0.2.7:5555", "[2001:db8::1]:443",
// as some proxies write the client's address) is dropped, so that every
// connection of a client counts under the same key, and so are a zone and
// surrounding brackets. A value that is not an IP address is kept as it
// is, cut to 64 bytes; an empty one stays empty (no client to limit).
func ClientKey(addr string) string {
	trimmed := strings.TrimSpace(addr)
	s := strings.TrimSuffix(strings.TrimPrefix(trimmed, "["), "]")
	ip, err := netip.ParseAddr(s)
	if err != nil {
		// An address with a port; a bare IPv6 address never gets here,
		// so its last group is never taken for a port.
		if ap, perr := netip.ParseAddrPort(trimmed); perr == nil {
			ip, err = ap.Addr(), nil
		}
	}
	if err != nil {
		if len(addr) > maxClientKey {
			addr = addr[:maxClientKey]
		}
		return addr
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64) // a 16-byte address always has a /64
	return p.String()
}
