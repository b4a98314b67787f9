package emailcheck

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// dnsOutcome is what DNS says about a domain's ability to receive mail.
type dnsOutcome uint8

const (
	outcomeMX           dnsOutcome = iota // at least one usable MX host
	outcomeImplicitMX                     // no MX, but A/AAAA accepted under Config.ImplicitMX
	outcomeNoMX                           // the domain exists but has no usable mail server
	outcomeNullMX                         // the domain publishes a null MX (RFC 7505)
	outcomeNXDomain                       // the domain does not exist
	outcomeUnknown                        // DNS could not answer
	outcomeHostsUnknown                   // the domain has MX hosts, but DNS could not resolve any of them
)

// domainInfo is the cached verdict on one domain.
type domainInfo struct {
	outcome dnsOutcome
	mxHosts []string // usable MX hosts, most preferred first
	class   domainClass
	suggest string // the domain probably meant instead, or ""
	// unreachable marks an outcomeUnknown because no nameserver answered
	// at all, rather than because one answered with a failure.
	unreachable bool
	// dnsReason is the finer cause of an outcomeUnknown or outcomeNoMX,
	// when DNS showed one.
	dnsReason Reason
	expires   time.Time
	feedGen   uint64 // the operator's list's generation the class was judged under

	promoted atomic.Int64 // unix nanoseconds of the last LRU promotion
}

// exists reports whether DNS showed that the domain exists.
func (d *domainInfo) exists() bool {
	switch d.outcome {
	case outcomeMX, outcomeImplicitMX, outcomeNoMX, outcomeNullMX, outcomeHostsUnknown:
		return true
	}
	return false
}

// resolveDomain looks a domain up over DNS: MX, and, when Config.ImplicitMX
// allows the fallback to the domain's address and the domain has no MX,
// A and AAAA. It returns the verdict and how long it may be cached. The
// address lookups wait for the MX answer: most domains have MX records,
// and asking all three at once would triple the queries a burst of new
// domains sends, which a resolver's window then spreads over more round
// trips than the second one this costs a domain without MX.
func (v *Validator) resolveDomain(ctx context.Context, domain string) (*domainInfo, time.Duration) {
	fqdn := dns.Fqdn(domain)
	mx, mxErr := v.resolver.lookup(ctx, fqdn, dns.TypeMX)

	info := &domainInfo{}
	ttl := v.cfg.FailureTTL
	switch {
	case mxErr != nil:
		info.outcome = outcomeUnknown
		// A SERVFAIL while the resolver resolves nothing at all is the
		// resolver's failure, not the name's: as good as no answer.
		info.unreachable = errors.Is(mxErr, errUnreachable) || v.resolver.cutOff(ctx)
		info.dnsReason = ReasonDNSServfail
		if info.unreachable {
			info.dnsReason = ReasonDNSTimeout
		}
		v.logFailure(ctx, domain, mxErr)
	case mx.rcode == dns.RcodeNameError && !mx.aliased && (!mx.soa || !v.resolver.trusted(ctx)):
		// An NXDOMAIN condemns only from nameservers shown to tell the
		// truth, and only with the zone's SOA (RFC 2308): a resolver that
		// denies everything would condemn every address.
		info.outcome = outcomeUnknown
		info.dnsReason = ReasonDNSUntrusted
		if !mx.soa {
			v.resolver.distrust()
		}
	case mx.rcode == dns.RcodeNameError && !mx.aliased:
		info.outcome = outcomeNXDomain
		ttl = v.negativeTTL(mx.negTTL)
	default:
		hosts, null := usableMX(mx.records)
		switch {
		case len(hosts) > 0:
			// An MX is usable only if one of its hosts resolves to an
			// address mail can go to; when none does and a lookup failed,
			// we do not know.
			ttl = v.clampTTL(mx.ttl)
			i, failed, private, hostTTL := v.resolveMXHosts(ctx, hosts, mx.extra)
			switch {
			case i >= 0:
				info.outcome, info.mxHosts = outcomeMX, hosts
				ttl = min(ttl, hostTTL)
			case failed:
				info.outcome = outcomeHostsUnknown
				ttl = v.cfg.FailureTTL
			default:
				info.outcome = outcomeNoMX
				info.dnsReason = ReasonMXUnresolvable
				if private {
					info.dnsReason = ReasonMXPrivate
				}
				ttl = min(ttl, hostTTL)
			}
		case null:
			info.outcome = outcomeNullMX
			ttl = v.clampTTL(mx.ttl)
		default:
			info.outcome = outcomeNoMX
			ttl = v.negativeTTL(mx.negTTL)
			if len(mx.records) > 0 {
				info.dnsReason = ReasonMXInvalid
				ttl = v.clampTTL(mx.ttl)
			}
		}
	}
	// RFC 5321 §5.1 falls back to the address only when there is no MX at
	// all: MX records that are all unusable still mean "no mail".
	if v.cfg.ImplicitMX && info.outcome == outcomeNoMX && len(mx.records) == 0 {
		a, aaaa := v.lookupAddresses(ctx, fqdn)
		switch {
		case hasUsableAddress(a.set.records) || hasUsableAddress(aaaa.set.records):
			info.outcome, info.dnsReason = outcomeImplicitMX, ""
			ttl = min(ttl, v.clampTTL(min(positiveTTL(a.set), positiveTTL(aaaa.set))))
		case a.err != nil || aaaa.err != nil:
			// We cannot tell whether an address record exists.
			info.outcome = outcomeUnknown
			info.dnsReason = ReasonDNSServfail
			if (a.err == nil || errors.Is(a.err, errUnreachable)) && (aaaa.err == nil || errors.Is(aaaa.err, errUnreachable)) {
				info.dnsReason = ReasonDNSTimeout
			}
			ttl = v.cfg.FailureTTL
			v.logFailure(ctx, domain, errors.Join(a.err, aaaa.err))
		}
	}
	v.classifyInfo(domain, info)
	return info, ttl
}

// classifyInfo applies the lists and the name's suggestion to a verdict
// whose DNS part is complete.
func (v *Validator) classifyInfo(domain string, info *domainInfo) {
	info.feedGen = v.classifier.feed.generation()
	info.class = v.classifier.classifyDomain(domain, info.mxHosts)
	// DNS trouble is no evidence of a typo: only a domain shown not to
	// receive mail gets the wider suggestions.
	receives := info.outcome != outcomeNXDomain && info.outcome != outcomeNoMX && info.outcome != outcomeNullMX
	info.suggest = v.suggester.suggest(domain, receives)
}

// reclassify returns a cached verdict judged again under the operator's
// list of generation gen, and caches it in place of old: the DNS answers
// kept, the lists and suggestions applied anew, nothing learnt twice.
func (v *Validator) reclassify(domain string, old *domainInfo, gen uint64) *domainInfo {
	info := &domainInfo{
		outcome:     old.outcome,
		mxHosts:     old.mxHosts,
		unreachable: old.unreachable,
		dnsReason:   old.dnsReason,
		expires:     old.expires,
	}
	v.classifyInfo(domain, info)
	v.refine(domain, info, false)
	info.feedGen = gen
	info.promoted.Store(old.promoted.Load())
	v.cache.Add(domain, info)
	return info
}

// addressAnswer is the answer to an A or AAAA lookup.
type addressAnswer struct {
	set rrset
	err error
}

// lookupAddresses looks up fqdn's A and AAAA records at the same time.
func (v *Validator) lookupAddresses(ctx context.Context, fqdn string) (a, aaaa addressAnswer) {
	aaaaCh := make(chan addressAnswer, 1)
	go func() {
		s, err := v.resolver.lookup(ctx, fqdn, dns.TypeAAAA)
		aaaaCh <- addressAnswer{s, err}
	}()
	a.set, a.err = v.resolver.lookup(ctx, fqdn, dns.TypeA)
	return a, <-aaaaCh
}

// positiveTTL is the TTL of a non-empty answer, or the maximum otherwise so
// that it does not lower a minimum.
func positiveTTL(s rrset) uint32 {
	if len(s.records) == 0 {
		return ^uint32(0)
	}
	return s.ttl
}

// usableMX returns the MX hosts that can receive mail, most preferred first
// and without duplicates, and whether the set is a null MX (RFC 7505). Hosts
// that are the root, "localhost" or an IP address are not usable.
func usableMX(records []dns.RR) (hosts []string, null bool) {
	type pref struct {
		host string
		pref uint16
	}
	var found []pref
	for _, rr := range records {
		mx, ok := rr.(*dns.MX)
		if !ok {
			continue
		}
		host := strings.TrimSuffix(strings.ToLower(mx.Mx), ".")
		if host == "" {
			null = true
			continue
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			continue
		}
		if _, err := netip.ParseAddr(host); err == nil {
			continue
		}
		found = append(found, pref{host, mx.Preference})
	}
	if len(found) == 0 {
		return nil, null && len(records) == 1
	}
	slices.SortStableFunc(found, func(a, b pref) int { return int(a.pref) - int(b.pref) })
	hosts = make([]string, 0, len(found))
	for _, p := range found {
		if !slices.Contains(hosts, p.host) {
			hosts = append(hosts, p.host)
		}
	}
	return hosts, false
}

// hasUsableAddress reports whether an A or AAAA set holds an address mail
// could be delivered to: not loopback, unspecified, link-local or multicast.
func hasUsableAddress(records []dns.RR) bool {
	for _, rr := range records {
		if usableIP(rrAddr(rr)) {
			return true
		}
	}
	return false
}

func usableIP(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() &&
		!a.IsLinkLocalMulticast() && !a.IsMulticast() && !a.IsInterfaceLocalMulticast()
}

// clampTTL turns an answer's TTL into a cache lifetime within
// [MinTTL, MaxTTL].
func (v *Validator) clampTTL(ttl uint32) time.Duration {
	d := time.Duration(ttl) * time.Second
	return min(max(d, v.cfg.MinTTL), v.cfg.MaxTTL)
}

// negativeTTL is the cache lifetime of a negative answer: the SOA minimum
// when the server sent one (RFC 2308), clamped like any TTL.
func (v *Validator) negativeTTL(soaMin uint32) time.Duration {
	if soaMin == 0 {
		return v.cfg.MinTTL
	}
	return v.clampTTL(soaMin)
}

func (v *Validator) logFailure(ctx context.Context, domain string, err error) {
	v.cfg.Logger.DebugContext(ctx, "emailcheck: dns lookup failed", "domain", domain, "err", err)
}
