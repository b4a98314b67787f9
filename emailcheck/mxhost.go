package emailcheck

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

// hostState is what DNS says about one MX host's addresses.
type hostState uint8

const (
	hostPublic  hostState = iota // at least one public unicast address
	hostPrivate                  // addresses, none of them public (loopback, private, reserved, ...)
	hostMissing                  // NXDOMAIN, or neither A nor AAAA
	hostFailed                   // DNS could not answer
)

// hostInfo is the cached verdict on one MX host.
type hostInfo struct {
	state   hostState
	addrs   []netip.Addr // in answer order, IPv4 first
	expires time.Time
}

// usable reports whether mail can be handed to the host: a public address,
// or any address when private MX hosts are allowed.
func (h *hostInfo) usable(allowPrivate bool) bool {
	return h.state == hostPublic || (allowPrivate && h.state == hostPrivate)
}

// resolveMXHosts resolves hosts, most preferred first, and stops at the
// first usable one. It returns that host's index (-1 when none is usable),
// whether a lookup failed on the way (then "no usable host" is not known),
// whether a host had only addresses that are not public, and how long the
// verdict may be cached. extra holds the address records
// that came with the MX answer: a host found there costs no query.
func (v *Validator) resolveMXHosts(ctx context.Context, hosts []string, extra []dns.RR) (usable int, failed, private bool, ttl time.Duration) {
	ttl = v.cfg.MaxTTL
	for i, h := range hosts {
		info, hostTTL := v.hostFromExtra(h, extra)
		if info == nil {
			info, hostTTL = v.hostInfo(ctx, h)
		}
		ttl = min(ttl, hostTTL)
		if info.usable(v.cfg.AllowPrivateMX) {
			return i, failed, private, ttl
		}
		switch info.state {
		case hostFailed:
			failed = true
		case hostPrivate:
			private = true
		}
	}
	return -1, failed, private, ttl
}

// hostFromExtra returns the verdict on host from the address records of an
// additional section, caching it like a lookup; nil when they hold none
// for host.
func (v *Validator) hostFromExtra(host string, extra []dns.RR) (*hostInfo, time.Duration) {
	if len(extra) == 0 {
		return nil, 0
	}
	h := &hostInfo{}
	ttl := ^uint32(0)
	for _, rr := range extra {
		hdr := rr.Header()
		if !strings.EqualFold(strings.TrimSuffix(hdr.Name, "."), host) {
			continue
		}
		if addr := rrAddr(rr); addr.IsValid() {
			h.addrs = append(h.addrs, addr)
			ttl = min(ttl, hdr.Ttl)
		}
	}
	if len(h.addrs) == 0 {
		return nil, 0
	}
	h.state = hostPrivate
	if hasPublic(h.addrs) {
		h.state = hostPublic
	}
	d := v.clampTTL(ttl)
	h.expires = time.Now().Add(d)
	if v.hosts != nil {
		v.hosts.Add(host, h)
	}
	return h, d
}

// rrAddr returns the address of an A or AAAA record; the zero Addr
// otherwise.
func rrAddr(rr dns.RR) netip.Addr {
	var addr netip.Addr
	switch r := rr.(type) {
	case *dns.A:
		addr, _ = netip.AddrFromSlice(r.A.To4())
	case *dns.AAAA:
		addr, _ = netip.AddrFromSlice(r.AAAA)
	}
	return addr.Unmap()
}

// hostInfo returns the verdict on an MX host from the host cache, or from
// one A and one AAAA query shared by every domain asking for the host
// meanwhile: thousands of domains hosted by one provider cost one lookup.
// The second result is the time left to cache it.
func (v *Validator) hostInfo(ctx context.Context, host string) (*hostInfo, time.Duration) {
	now := time.Now()
	if v.hosts != nil {
		if h, ok := v.hosts.Get(host); ok && now.Before(h.expires) {
			return h, h.expires.Sub(now)
		}
	}
	r, _, _ := v.hostFlights.Do(host, func() (any, error) {
		h, ttl := v.resolveHost(ctx, host)
		h.expires = time.Now().Add(ttl)
		if v.hosts != nil && ttl > 0 && ctx.Err() == nil {
			v.hosts.Add(host, h)
		}
		return h, nil
	})
	h := r.(*hostInfo)
	return h, max(0, time.Until(h.expires))
}

// resolveHost looks up a host's A and AAAA records side by side.
func (v *Validator) resolveHost(ctx context.Context, host string) (*hostInfo, time.Duration) {
	fqdn := dns.Fqdn(host)
	type answer struct {
		set rrset
		err error
	}
	aaaaCh := make(chan answer, 1)
	go func() { s, err := v.resolver.lookup(ctx, fqdn, dns.TypeAAAA); aaaaCh <- answer{s, err} }()
	a, aErr := v.resolver.lookup(ctx, fqdn, dns.TypeA)
	aaaa := <-aaaaCh

	h := &hostInfo{}
	for _, rr := range append(a.records, aaaa.set.records...) {
		if addr := rrAddr(rr); addr.IsValid() {
			h.addrs = append(h.addrs, addr)
		}
	}
	switch {
	case hasPublic(h.addrs):
		h.state = hostPublic
		return h, v.clampTTL(min(positiveTTL(a), positiveTTL(aaaa.set)))
	case len(h.addrs) > 0:
		h.state = hostPrivate
		return h, v.clampTTL(min(positiveTTL(a), positiveTTL(aaaa.set)))
	case aErr != nil || aaaa.err != nil:
		// One family failed and the other had nothing: the host may well
		// have an address we could not see.
		h.state = hostFailed
		v.logFailure(ctx, host, errors.Join(aErr, aaaa.err))
		return h, v.cfg.FailureTTL
	}
	h.state = hostMissing
	return h, v.negativeTTL(min(nonZero(a.negTTL), nonZero(aaaa.set.negTTL)))
}

// hasPublic reports whether any of addrs is a public address
// ([netpolicy.IsPublic]).
func hasPublic(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if netpolicy.IsPublic(a) {
			return true
		}
	}
	return false
}

// nonZero maps 0 (no SOA minimum) to the largest value, so that min picks
// the other one.
func nonZero(n uint32) uint32 {
	if n == 0 {
		return ^uint32(0)
	}
	return n
}
