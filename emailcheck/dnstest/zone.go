package dnstest

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// MX is one mail exchanger of a [Domain]. A null MX (RFC 7505), which
// states that a domain accepts no mail, is MX{Pref: 0, Host: "."}.
//
// Validators resolve an MX host to its addresses, so the server answers
// A and AAAA queries for the host's name too, unless the zone has an entry
// of its own for that name (which then decides, as for any name): with
// Addrs when set, otherwise with [DefaultMXAddr] (no AAAA). Missing makes
// the host's name not exist instead; [Options.NoMXAddrs] turns the
// default address off for the whole server.
type MX struct {
	// Pref is the preference; lower values are tried first.
	Pref uint16
	// Host is the exchanger's name; the trailing dot is optional.
	Host string
	// Addrs are the host's addresses, IPv4 or IPv6 in text form, answered
	// as A or AAAA records. Empty means [DefaultMXAddr].
	Addrs []string
	// Missing makes the host's name answer NXDOMAIN: an MX pointing at a
	// host that does not exist.
	Missing bool
}

// DefaultMXAddr is the address an MX host answers with when neither the
// zone nor [MX.Addrs] gives one: a public unicast address (the historical
// address of example.com, held by IANA), so that the host counts as a
// public mail server. Tests never connect to it.
const DefaultMXAddr = "93.184.216.34"

// Domain holds the records of one name and the faults the server injects
// when that name is queried. The zero value is a name that exists and has
// no records (every query for it is answered NODATA).
type Domain struct {
	// MX, A, AAAA and TXT are the name's records. A must hold IPv4
	// addresses and AAAA IPv6 addresses, in text form. Each TXT element
	// is one record; text longer than 255 bytes is split into several
	// character-strings of that record, as publishers of long SPF and
	// DKIM records do.
	MX   []MX
	A    []string
	AAAA []string
	TXT  []string

	// CNAME, when set, makes the name an alias: it is answered for every
	// query type, and the other records of this Domain are ignored.
	CNAME string

	// TTL is the TTL of the answer records; 0 means 300.
	TTL uint32

	// Rcode, when nonzero, is the response code of every query for this
	// name (dns.RcodeServerFailure, dns.RcodeRefused, ...); the answer
	// then carries no records. It also applies when the name is reached
	// through a CNAME.
	Rcode int

	// Drop makes the server never answer queries for this name, so that
	// clients time out.
	Drop bool

	// Latency is an extra delay before answering this name, added to
	// the server-wide latency.
	Latency time.Duration

	// Truncate makes answers over UDP carry the TC bit and no records;
	// the full answer is given only over TCP.
	Truncate bool

	// Garbage makes the server answer with bytes that do not parse as a
	// DNS message.
	Garbage bool

	// WrongID makes the server answer with a message id that does not
	// match the query's.
	WrongID bool
}

// Zone maps names to their records. Keys are case-insensitive and the
// trailing dot is optional. A key whose first label is "*" (such as
// "*.example.com") is a wildcard: it answers for names below it that are
// neither in the zone nor below a closer name in the zone (RFC 4592).
type Zone map[string]Domain

// canonical returns name in lower case with a trailing dot.
func canonical(name string) string {
	return strings.ToLower(dns.Fqdn(name))
}

// parent returns the canonical parent of a canonical name, or "" for the
// root and for single-label names' parent (the root is never a zone name).
func parent(name string) string {
	i := strings.IndexByte(name, '.')
	if i < 0 || i == len(name)-1 {
		return ""
	}
	return name[i+1:]
}

// validate reports the first problem with d's records, naming name.
func validate(name string, d Domain) error {
	if _, ok := dns.IsDomainName(name); !ok || name == "." {
		return fmt.Errorf("dnstest: invalid name %q", name)
	}
	for _, a := range d.A {
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.Is4() {
			return fmt.Errorf("dnstest: %s: invalid A address %q", name, a)
		}
	}
	for _, a := range d.AAAA {
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.Is6() || ip.Is4In6() {
			return fmt.Errorf("dnstest: %s: invalid AAAA address %q", name, a)
		}
	}
	for _, mx := range d.MX {
		if _, ok := dns.IsDomainName(mx.Host); !ok {
			return fmt.Errorf("dnstest: %s: invalid MX host %q", name, mx.Host)
		}
		for _, a := range mx.Addrs {
			if _, err := netip.ParseAddr(a); err != nil {
				return fmt.Errorf("dnstest: %s: MX host %s: invalid address %q", name, mx.Host, a)
			}
		}
	}
	if d.CNAME != "" {
		if _, ok := dns.IsDomainName(d.CNAME); !ok || d.CNAME == "." {
			return fmt.Errorf("dnstest: %s: invalid CNAME target %q", name, d.CNAME)
		}
	}
	return nil
}

// defaultTTL is the answer TTL when Domain.TTL is zero.
const defaultTTL = 300

// records returns d's records of type qtype, owned by owner. CNAME is
// handled by the caller except for qtype CNAME and ANY.
func records(owner string, d Domain, qtype uint16) []dns.RR {
	ttl := d.TTL
	if ttl == 0 {
		ttl = defaultTTL
	}
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: owner, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
	}
	var rrs []dns.RR
	if (qtype == dns.TypeCNAME || qtype == dns.TypeANY) && d.CNAME != "" {
		rrs = append(rrs, &dns.CNAME{Hdr: hdr(dns.TypeCNAME), Target: canonical(d.CNAME)})
	}
	if d.CNAME != "" {
		return rrs
	}
	if qtype == dns.TypeA || qtype == dns.TypeANY {
		for _, a := range d.A {
			ip := netip.MustParseAddr(a).AsSlice()
			rrs = append(rrs, &dns.A{Hdr: hdr(dns.TypeA), A: ip})
		}
	}
	if qtype == dns.TypeAAAA || qtype == dns.TypeANY {
		for _, a := range d.AAAA {
			ip := netip.MustParseAddr(a).AsSlice()
			rrs = append(rrs, &dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: ip})
		}
	}
	if qtype == dns.TypeMX || qtype == dns.TypeANY {
		for _, mx := range d.MX {
			rrs = append(rrs, &dns.MX{Hdr: hdr(dns.TypeMX), Preference: mx.Pref, Mx: canonical(mx.Host)})
		}
	}
	if qtype == dns.TypeTXT || qtype == dns.TypeANY {
		for _, t := range d.TXT {
			rrs = append(rrs, &dns.TXT{Hdr: hdr(dns.TypeTXT), Txt: splitTXT(t)})
		}
	}
	return rrs
}

// splitTXT splits text into character-strings of at most 255 bytes.
func splitTXT(text string) []string {
	if len(text) <= 255 {
		return []string{text}
	}
	var parts []string
	for len(text) > 255 {
		parts = append(parts, text[:255])
		text = text[255:]
	}
	return append(parts, text)
}

// soa returns the SOA record put in the authority section of negative
// answers for name. Its owner is the name's last two labels, a plausible
// zone apex; its TTL and minimum are the negative TTL (RFC 2308).
func soa(name string, negTTL uint32) dns.RR {
	apex := name
	if n := dns.CountLabel(name); n > 2 {
		apex = parentN(name, n-2)
	}
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: apex, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: negTTL},
		Ns:      "ns.dnstest.",
		Mbox:    "hostmaster.dnstest.",
		Serial:  1,
		Refresh: 3600,
		Retry:   600,
		Expire:  86400,
		Minttl:  negTTL,
	}
}

// parentN strips n leading labels from a canonical name.
func parentN(name string, n int) string {
	for ; n > 0; n-- {
		name = parent(name)
	}
	return name
}
