package emailcheck

import (
	"net/netip"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/net/publicsuffix"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

// burnerMark records what was seen at one MX host address: how many
// listed burner domains and how many other domains have their mail there.
// The address is taken for a burner service's only when at least two
// listed domains, with different registrable domains, are seen there and
// they outnumber the others: a listed domain or two on a shared web host
// must not condemn its neighbours, while a burner service's server holds
// mostly the list's domains. Every domain the mark condemns counts among
// the others, so a wrong mark wears itself out.
type burnerMark struct {
	first    string // the registrable domain of the first listed burner seen there
	listed   int    // listed burner domains resolved there, counting the first
	distinct bool   // a listed domain other than first was seen there
	others   int    // other domains resolved there since first
	expires  time.Time
}

// condemns reports whether the address is a burner service's.
func (m burnerMark) condemns() bool { return m.distinct && m.listed >= 2 && m.listed > m.others }

// burnerAddrs holds what the validator learned about burners' MX
// addresses. It lives beside the DNS cache and is bounded by its size.
type burnerAddrs = lru.Cache[netip.Addr, burnerMark]

// refine completes the verdict on a domain just resolved, before it is
// cached, with what takes more than the domain's own records:
//   - a domain that does not exist names no provider (the domain list's
//     provider is a guess at someone else's domain);
//   - a domain listed as disposable teaches its MX hosts' addresses, and a
//     domain whose MX host has an address learned from listed burners is
//     disposable (disposableMX), unless allowlisted or known;
//   - a domain that receives mail gets a suggestion where its MX hosts say
//     typo (suggester.suggestReceiving);
//   - a domain with a suggestion is a typo, and never free; its name says
//     nothing of who runs its mail (yahoo.cm is not Yahoo's), so its
//     provider and alias rule come from its MX hosts alone
//     (classifier.providerByMX).
func (v *Validator) refine(domain string, info *domainInfo) {
	if info.outcome == outcomeNXDomain {
		info.class.provider, info.class.rule = "Unknown", aliasRuleUnknown
	}
	if info.outcome == outcomeMX {
		v.learnBurner(domain, info)
		if info.suggest == "" {
			info.suggest = v.suggester.suggestReceiving(domain, info.mxHosts, info.class)
		}
	}
	if info.suggest != "" {
		info.class.free = false
		p := v.classifier.providerByMX(info.mxHosts)
		info.class.provider, info.class.rule = p.name, p.rule
	}
}

// learnBurner records the MX addresses of a listed burner domain, or marks
// an unlisted domain whose MX host shares a confirmed burner address. Only
// addresses already in the host cache are used: it costs no query.
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
				seen, m = false, burnerMark{}
			}
			switch {
			case teach && !seen:
				v.burners.Add(a, burnerMark{first: reg, listed: 1, expires: hi.expires})
			case teach:
				m.listed++
				m.distinct = m.distinct || reg != m.first
				if hi.expires.After(m.expires) {
					m.expires = hi.expires
				}
				v.burners.Add(a, m)
			case seen:
				condemned := m.condemns()
				m.others++
				v.burners.Add(a, m)
				if condemned {
					info.class.disposable, info.class.reason = true, disposableMX
					return
				}
			}
		}
	}
}
