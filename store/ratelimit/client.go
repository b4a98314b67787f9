package ratelimit

import (
	"net/netip"
	"strings"
)

// maxClientKey bounds the key of a client address that is not an IP
// address (what a misconfigured proxy header may hold).
const maxClientKey = 64

// ClientKey returns the key under which every limit per client address
// counts the address addr (as a ClientIP function returns it): the
// client's network, so that one client cannot step around a limit by
// walking its own network's addresses. An IPv6 address stands for its
// /64, the least a single subscriber is given, and an IPv4 address (also
// one written as IPv4-mapped IPv6) for its /24, the smallest block routed
// on the Internet and the IPv4 analogue: addresses rented by the handful
// come from one /24, so ten of them count as one client, not ten. The
// price is the same as a /64's: clients that share a /24 (neighbours
// behind one provider's block) share its limits. Both keys are written
// as a prefix: "192.0.2.0/24", "2001:db8:1:2::/64".
//
// A port ("192.0.2.7:5555", "[2001:db8::1]:443", as some proxies write
// the client's address) is dropped, so that every connection of a client
// counts under the same key, and so are a zone and surrounding brackets. A value that is not an IP address is kept as it
// is, cut to 64 bytes; an empty one stays empty (no client to limit).
func ClientKey(addr string) string { return networkKey(addr, 24) }

// SubscriberKey is [ClientKey] for limits whose client is a machine
// rather than a person: an IPv4 address stands for itself ("192.0.2.7/32")
// and an IPv6 address for its /64, one subscriber's either way. The API's
// failed authentications count under it, so that a stranger renting a
// server in a cloud provider's /24 cannot get its neighbours' valid keys
// refused by failing his own.
func SubscriberKey(addr string) string { return networkKey(addr, 32) }

// networkKey is the key of addr's network: its IPv4 /v4bits or its IPv6
// /64, as [ClientKey] describes.
func networkKey(addr string, v4bits int) string {
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
	bits := 64
	if ip.Is4() {
		bits = v4bits
	}
	p, _ := ip.Prefix(bits) // an address always has a prefix this short
	return p.String()
}
