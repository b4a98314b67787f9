package netpolicy_test

import (
	"net/netip"
	"testing"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

func TestIsPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		public bool
	}{
		// IPv4 special-purpose ranges.
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"10.255.255.255", false},
		{"100.64.0.1", false},      // CGNAT
		{"100.127.255.255", false}, // CGNAT, last
		{"100.128.0.1", true},      // just past CGNAT
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false}, // cloud metadata
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"172.32.0.1", true},
		{"192.0.0.1", false},
		{"192.0.0.9", false}, // within 192.0.0.0/24: refused as a whole
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false}, // benchmarking
		{"198.19.255.255", false},
		{"198.20.0.1", true},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"93.184.216.34", true},

		// IPv6 special-purpose ranges.
		{"::", false},
		{"::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"ff0e::1", false},
		{"100::1", false}, // discard-only
		{"100::ffff:1", false},
		{"2001:db8::1", false},
		{"3fff::1", false},
		{"2001:2::1", false},  // benchmarking
		{"2001:10::1", false}, // ORCHID
		{"5f00::1", false},    // segment routing
		{"4000::1", false},    // outside global unicast space
		{"::ffff:0:7f00:1", false},
		{"64:ff9b:2::1", false},
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001::1", true},
		{"2001:4860:4860::8888", true},
		{"2606:4700::1%eth0", true}, // a zone changes nothing
		{"2620:4f:8000::1", true},

		// IPv4-mapped: judged by the IPv4 address.
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.1.2.3", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:100.64.0.1", false},
		{"::ffff:8.8.8.8", true},

		// IPv4-compatible (::/96).
		{"::127.0.0.1", false},
		{"::10.1.2.3", false},
		{"::192.168.0.1", false},
		{"::8.8.8.8", true},

		// NAT64, well-known prefix.
		{"64:ff9b::7f00:1", false},    // 127.0.0.1
		{"64:ff9b::a01:203", false},   // 10.1.2.3
		{"64:ff9b::a9fe:a9fe", false}, // 169.254.169.254
		{"64:ff9b::c0a8:101", false},  // 192.168.1.1
		{"64:ff9b::808:808", true},    // 8.8.8.8

		// NAT64, local-use prefix: never public.
		{"64:ff9b:1::7f00:1", false},
		{"64:ff9b:1::a01:203", false},
		{"64:ff9b:1::808:808", false},
		{"64:ff9b:1:ffff::808:808", false},

		// 6to4: the IPv4 address is bits 16 to 47.
		{"2002:7f00:1::1", false},       // 127.0.0.1
		{"2002:a01:203::1", false},      // 10.1.2.3
		{"2002:c0a8:101:5::1", false},   // 192.168.1.1
		{"2002:a9fe:a9fe::1", false},    // 169.254.169.254
		{"2002:6440:1::1", false},       // 100.64.0.1
		{"2002:808:808::1", true},       // 8.8.8.8
		{"2002:808:808:ffff::ab", true}, // 8.8.8.8, any subnet

		// Teredo: server 65.54.227.120 (4136:e378), client the last 32
		// bits inverted.
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false}, // client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", false}, // client 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, // client 192.0.2.45 (RFC 4380's example)
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", true},  // client 8.8.8.8
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", false},     // server 10.0.0.1
		{"2001:0:7f00:1:8000:63bf:f7f7:f7f7", false},    // server 127.0.0.1
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := netpolicy.IsPublic(a); got != tt.public {
			t.Errorf("IsPublic(%s) = %v, want %v", tt.addr, got, tt.public)
		}
	}
	if netpolicy.IsPublic(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

func TestEmbedded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr, v4 string // v4 "" when none
	}{
		{"8.8.8.8", "8.8.8.8"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"::10.1.2.3", "10.1.2.3"},
		{"::1", "0.0.0.1"},
		{"64:ff9b::7f00:1", "127.0.0.1"},
		{"64:ff9b:1::a01:203", "10.1.2.3"},
		{"2002:c0a8:101:5::1", "192.168.1.1"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"},
		{"2606:4700:4700::1111", ""},
		{"fe80::1%eth0", ""},
	}
	for _, tt := range tests {
		got, ok := netpolicy.Embedded(netip.MustParseAddr(tt.addr))
		if (tt.v4 == "") == ok || (ok && got != netip.MustParseAddr(tt.v4)) {
			t.Errorf("Embedded(%s) = %v, %v; want %q", tt.addr, got, ok, tt.v4)
		}
	}
}

func TestNetwork(t *testing.T) {
	t.Parallel()
	tests := []struct{ addr, net string }{
		{"192.0.2.77", "192.0.2.0/24"},
		{"::ffff:192.0.2.77", "192.0.2.0/24"},
		{"64:ff9b::c000:24d", "192.0.2.0/24"},
		{"2002:c000:24d:1::9", "192.0.2.0/24"},
		{"2606:4700:4700:1::1111", "2606:4700:4700:1::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	}
	for _, tt := range tests {
		if got := netpolicy.Network(netip.MustParseAddr(tt.addr)); got != netip.MustParsePrefix(tt.net) {
			t.Errorf("Network(%s) = %v, want %s", tt.addr, got, tt.net)
		}
	}
	if netpolicy.Network(netip.Addr{}).IsValid() {
		t.Error("the zero Addr has a network")
	}
}

// FuzzIsPublic checks the rule's invariants: every form carrying an IPv4
// address is judged as that address, a zone changes nothing, and nothing
// public is loopback, link-local, multicast, private or unspecified.
func FuzzIsPublic(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, []byte{0x20, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{8, 8, 8, 8}, []byte{0x20, 0x01, 0, 0, 0x41, 0x36, 0xe3, 0x78, 0x80, 0, 0x63, 0xbf, 0xf7, 0xf7, 0xf7, 0xf7})
	f.Add([]byte{10, 1, 2, 3}, []byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0, 0, 1})
	f.Add([]byte{100, 64, 0, 1}, []byte{0x26, 0x06, 0x47, 0, 0x47, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x11})
	f.Fuzz(func(t *testing.T, ip4, ip6 []byte) {
		if len(ip4) != 4 || len(ip6) != 16 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(ip4))
		want := netpolicy.IsPublic(v4)
		if want && (v4.IsPrivate() || !v4.IsGlobalUnicast()) {
			t.Fatalf("%s is public", v4)
		}
		b := [16]byte(ip6)
		forms := map[string][16]byte{}
		m := [16]byte{10: 0xff, 11: 0xff}
		copy(m[12:], ip4)
		forms["mapped"] = m
		c := [16]byte{}
		copy(c[12:], ip4)
		forms["compatible"] = c
		n := [16]byte{1: 0x64, 2: 0xff, 3: 0x9b}
		copy(n[12:], ip4)
		forms["NAT64"] = n
		s := b
		s[0], s[1] = 0x20, 0x02
		copy(s[2:6], ip4)
		forms["6to4"] = s
		tr := b
		copy(tr[:8], []byte{0x20, 0x01, 0, 0, 0x41, 0x36, 0xe3, 0x78}) // server 65.54.227.120
		for i := range 4 {
			tr[12+i] = ^ip4[i]
		}
		forms["Teredo"] = tr
		for name, f := range forms {
			a := netip.AddrFrom16(f)
			if got := netpolicy.IsPublic(a); got != want {
				t.Fatalf("%s form %s of %s: public %v, the IPv4 address %v", name, a, v4, got, want)
			}
			if e, ok := netpolicy.Embedded(a); !ok || e != v4 {
				t.Fatalf("%s form %s of %s: embedded %v, %v", name, a, v4, e, ok)
			}
			if netpolicy.Network(a) != netpolicy.Network(v4) {
				t.Fatalf("%s form %s of %s: network %v, want %v", name, a, v4, netpolicy.Network(a), netpolicy.Network(v4))
			}
		}
		local := n
		local[5] = 1
		if netpolicy.IsPublic(netip.AddrFrom16(local)) {
			t.Fatalf("local-use NAT64 %s is public", netip.AddrFrom16(local))
		}

		a := netip.AddrFrom16(b)
		got := netpolicy.IsPublic(a)
		if netpolicy.IsPublic(a.WithZone("eth0")) != got {
			t.Fatalf("a zone changes the verdict on %s", a)
		}
		if got && (a.IsLoopback() || a.IsMulticast() || a.IsLinkLocalUnicast() || a.IsPrivate() || a.IsUnspecified()) {
			t.Fatalf("%s is public", a)
		}
		if e, ok := netpolicy.Embedded(a); ok && got && !netpolicy.IsPublic(e) {
			t.Fatalf("%s is public but carries %s", a, e)
		}
		if d := netpolicy.Destination(a); !netpolicy.Network(a).Contains(d) {
			t.Fatalf("the network %v of %s does not hold its destination %s", netpolicy.Network(a), a, d)
		}
	})
}
