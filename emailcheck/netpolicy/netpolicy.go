// Package netpolicy decides which IP addresses belong to the public
// Internet: the one rule by which the validator judges an MX host, the
// SMTP prober picks a destination and the webhook client refuses to dial.
//
// An address is public when it is a global unicast address outside every
// special-purpose range of the IANA IPv4 and IPv6 Special-Purpose Address
// Registries (RFC 6890 and successors) that is not globally reachable,
// and outside multicast and reserved space. IPv6 addresses that carry an
// IPv4 address, and through which a packet would reach that IPv4 host,
// are judged by the IPv4 address they carry ([Embedded]): IPv4-mapped
// (::ffff:0:0/96), IPv4-compatible (::/96), NAT64 (64:ff9b::/96), 6to4
// (2002::/16) and Teredo (2001::/32, whose server and client must both be
// public). The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) is never
// public: it is not routed on the Internet, whatever it carries.
//
// The package keeps no state and imports only the standard library.
package netpolicy

import "net/netip"

// blocked4 are the IPv4 ranges that are not public.
var blocked4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network", unspecified
	netip.MustParsePrefix("10.0.0.0/8"),      // private (RFC 1918)
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space, CGNAT (RFC 6598)
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, cloud metadata services
	netip.MustParsePrefix("172.16.0.0/12"),   // private (RFC 1918)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (RFC 6890)
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation, TEST-NET-1 (RFC 5737)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast, deprecated (RFC 7526)
	netip.MustParsePrefix("192.168.0.0/16"),  // private (RFC 1918)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking (RFC 2544)
	netip.MustParsePrefix("198.51.100.0/24"), // documentation, TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation, TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved (RFC 1112), limited broadcast
}

// global6 is the IPv6 global unicast space (RFC 4291, IANA); everything
// outside it (::/8, 100::/64, 64:ff9b::/96 unless it embeds a public
// address, fc00::/7, fe80::/10, fec0::/10, ff00::/8, ...) is not public.
var global6 = netip.MustParsePrefix("2000::/3")

// blocked6 are the ranges within global6 that are not public.
var blocked6 = []netip.Prefix{
	netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments: benchmarking, ORCHID, ... (Teredo is judged apart)
	netip.MustParsePrefix("2001:db8::/32"), // documentation (RFC 3849)
	netip.MustParsePrefix("3fff::/20"),     // documentation (RFC 9637)
}

// The IPv6 forms that carry an IPv4 address.
var (
	mapped   = netip.MustParsePrefix("::ffff:0:0/96")  // IPv4-mapped (RFC 4291)
	compat   = netip.MustParsePrefix("::/96")          // IPv4-compatible, deprecated (RFC 4291)
	nat64    = netip.MustParsePrefix("64:ff9b::/96")   // well-known NAT64 prefix (RFC 6052)
	nat64Loc = netip.MustParsePrefix("64:ff9b:1::/48") // local-use NAT64 (RFC 8215)
	sixTo4   = netip.MustParsePrefix("2002::/16")      // 6to4 (RFC 3056)
	teredo   = netip.MustParsePrefix("2001::/32")      // Teredo (RFC 4380)
)

// IsPublic reports whether addr is a public unicast address: one a
// service may connect to on behalf of a stranger without reaching the
// operator's own networks. An IPv6 address carrying an IPv4 address is
// judged by it (see the package documentation); a zone is ignored; the
// zero Addr is not public.
func IsPublic(addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	addr = addr.WithZone("")
	if addr.Is4() {
		return public4(addr)
	}
	if nat64Loc.Contains(addr) {
		return false
	}
	if teredo.Contains(addr) {
		b := addr.As16()
		server := netip.AddrFrom4([4]byte(b[4:8]))
		return public4(server) && public4(teredoClient(b))
	}
	if v4, ok := Embedded(addr); ok {
		return public4(v4)
	}
	if !global6.Contains(addr) {
		return false
	}
	for _, p := range blocked6 {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// Embedded returns the IPv4 address an IPv6 address carries, the host a
// packet to addr would reach, and whether there is one: the last 32 bits
// of an IPv4-mapped, IPv4-compatible or NAT64 address (the well-known
// prefix, or a /96 of the local-use one), bits 16 to 47 of a 6to4 address,
// and the client of a Teredo address (its last 32 bits inverted). An IPv4
// address carries itself.
func Embedded(addr netip.Addr) (netip.Addr, bool) {
	if !addr.IsValid() {
		return netip.Addr{}, false
	}
	if addr.Is4() {
		return addr, true
	}
	addr = addr.WithZone("")
	b := addr.As16()
	switch {
	case mapped.Contains(addr), compat.Contains(addr), nat64.Contains(addr), nat64Loc.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case teredo.Contains(addr):
		return teredoClient(b), true
	}
	return netip.Addr{}, false
}

// teredoClient returns the client address of a Teredo address: its last
// 32 bits, inverted (RFC 4380 §4).
func teredoClient(b [16]byte) netip.Addr {
	return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
}

// Destination returns the host a connection to addr reaches, for limits
// kept per destination: the IPv4 address it carries ([Embedded]), or addr
// itself without its zone.
func Destination(addr netip.Addr) netip.Addr {
	if v4, ok := Embedded(addr); ok {
		return v4
	}
	return addr.WithZone("")
}

// Network returns the network addr's destination belongs to, for limits
// kept per network: its /24 for IPv4, its /64 for IPv6. The zero Addr
// gives the zero Prefix.
func Network(addr netip.Addr) netip.Prefix {
	d := Destination(addr)
	if !d.IsValid() {
		return netip.Prefix{}
	}
	bits := 64
	if d.Is4() {
		bits = 24
	}
	p, _ := d.Prefix(bits)
	return p
}

func public4(a netip.Addr) bool {
	for _, p := range blocked4 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
