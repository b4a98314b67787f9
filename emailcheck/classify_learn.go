package emailcheck

import (
	"net/netip"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/net/publicsuffix"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

// burnerMark records what was seen at one MX host address: how many
// listed burner domains and how many other domains have their mail there.
// The address is taken for a burner service's only when listed domains of
// at least minBurnerDomains different registrable domains are seen there
// and they outnumber the others: a few listed domains on a shared web host
// must not condemn its neighbours, while a burner service's server holds
// mostly the list's domains. The other domains are counted whenever they
// are resolved, before the first listed one as after. A domain the mark
// condemns counts as a quarter of one (condemnedPerOther), so that a
// burner farm's address stays marked while its listed domains keep
// appearing there (each listed domain counts each time it is resolved
// again), and a wrong mark still wears itself out.
type burnerMark struct {
	regs      [minBurnerDomains - 1]string // the first registrable domains of listed burners seen there
	distinct  int                          // different registrable domains among them, up to minBurnerDomains
	listed    int                          // listed burner domains resolved there
	others    int                          // other domains resolved there while it condemned none
	condemned int                          // domains it condemned
	expires   time.Time
}

// condemnedPerOther is how many condemned domains weigh as much as one
// other domain against a mark.
const condemnedPerOther = 4

// minBurnerDomains is how many different registrable domains of listed
// burners an address must serve before it condemns others.
const minBurnerDomains = 3

// condemns reports whether the address is a burner service's.
func (m burnerMark) condemns() bool {
	return m.distinct >= minBurnerDomains && condemnedPerOther*m.listed > condemnedPerOther*m.others+m.condemned
}

// addListed counts a listed burner domain of registrable domain reg.
func (m *burnerMark) addListed(reg string) {
	m.listed++
	if m.distinct >= minBurnerDomains || slices.Contains(m.regs[:m.distinct], reg) {
		return
	}
	if m.distinct < len(m.regs) {
		m.regs[m.distinct] = reg
	}
	m.distinct++
}

// burnerAddrs holds what the validator learned about burners' MX
// addresses. It lives beside the DNS cache and is bounded by its size.
type burnerAddrs = lru.Cache[netip.Addr, burnerMark]

// refine completes the verdict on a domain just resolved, before it is
// cached, with what takes more than the domain's own records (learning
// from them only when learn is set: not when a cached verdict is judged
// again):
//   - a domain that does not exist names no provider (the domain list's
//     provider is a guess at someone else's domain);
//   - a domain listed as disposable teaches its MX hosts' addresses, and a
//     domain whose MX host has an address learned from listed burners is
//     disposable (disposableMX), unless allowlisted or known;
//   - a domain whose MX host is a parking service's teaches its
//     addresses, and one whose MX host has such an address is taken as
//     parked there (learnParked);
//   - a domain that receives mail gets a suggestion where its MX hosts say
//     typo (suggester.suggestReceiving);
//   - a domain with a suggestion is a typo, and never free; its name says
//     nothing of who runs its mail (yahoo.cm is not Yahoo's), so its
//     provider and alias rule come from its MX hosts alone
//     (classifier.providerByMX).
func (v *Validator) refine(domain string, info *domainInfo, learn bool) {
	if info.outcome == outcomeNXDomain {
		info.class.provider, info.class.rule = "Unknown", aliasRuleUnknown
	}
	if info.outcome == outcomeMX {
		if learn {
			v.learnBurner(domain, info)
		}
		learnt := v.learnParked(info.mxHosts)
		if info.suggest == "" {
			info.suggest = v.suggester.suggestReceiving(domain, info.mxHosts, info.class, learnt)
		}
	}
	if info.suggest != "" {
		info.class.free = false
		p := v.classifier.providerByMX(info.mxHosts)
		info.class.provider, info.class.rule = p.name, p.rule
	}
}

// learnBurner records the MX addresses of a listed burner domain, and
// those of any other domain, which it marks disposable when one of them is
// a confirmed burner address. Only addresses already in the host cache are
// used: it costs no query.
// Concurrent lookups may each miss the other's count: the marks are
// evidence, not accounts.
func (v *Validator) learnBurner(domain string, info *domainInfo) {
	if v.burners == nil || v.hosts == nil {
		return
	}
	c := v.classifier
	for _, h := range info.mxHosts {
		if c.hostedMX(h) || c.parkedMX(h) {
			// A mail service many domains share: its addresses say
			// nothing about one domain.
			return
		}
	}
	reg, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil {
		return
	}
	now := time.Now()
	teach := info.class.reason == disposableList
	if !teach && (info.class.disposable || c.isAllowed(domain)) {
		return
	}
	condemned := false
	for _, h := range info.mxHosts {
		hi, ok := v.hosts.Peek(h)
		if !ok || !now.Before(hi.expires) {
			continue
		}
		for _, a := range hi.addrs {
			if !netpolicy.IsPublic(a) {
				continue // private addresses mean different hosts on different networks
			}
			m, seen := v.burners.Peek(a)
			if seen && !now.Before(m.expires) {
				m = burnerMark{}
			}
			switch {
			case teach:
				m.addListed(reg)
			case m.condemns():
				condemned = true
				m.condemned++
			default:
				m.others++
			}
			if hi.expires.After(m.expires) {
				m.expires = hi.expires
			}
			v.burners.Add(a, m)
		}
	}
	if condemned {
		info.class.disposable, info.class.reason = true, disposableMX
	}
}

// parkedAddrs holds the addresses of parking services' MX hosts the
// validator has seen, each until its host's record expires. It lives
// beside the DNS cache and is bounded by its size. A registrar's default
// hosts are not learnt: their addresses serve its mail customers too.
type parkedAddrs = lru.Cache[netip.Addr, time.Time]

// learnParked records the addresses of the MX hosts of parking services
// the parking list names, and returns parkService when an MX host of
// another name has one of them (else parkNone): a parking service gives
// the domains it parks MX host names of their own as often as its own.
// Only addresses already in the host cache are used: it costs no query.
func (v *Validator) learnParked(mxHosts []string) parkKind {
	if v.parked == nil || v.hosts == nil {
		return parkNone
	}
	now := time.Now()
	found := parkNone
	for _, h := range mxHosts {
		hi, ok := v.hosts.Peek(h)
		if !ok || !now.Before(hi.expires) {
			continue
		}
		kind := v.classifier.parkedKind(h)
		for _, a := range hi.addrs {
			if !netpolicy.IsPublic(a) {
				continue // private addresses mean different hosts on different networks
			}
			exp, seen := v.parked.Peek(a)
			switch {
			case kind == parkService:
				if !seen || hi.expires.After(exp) {
					v.parked.Add(a, hi.expires)
				}
			case kind == parkNone && seen && now.Before(exp):
				found = parkService
			}
		}
	}
	return found
}
