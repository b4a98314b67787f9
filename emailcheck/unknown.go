package emailcheck

import (
	"cmp"
)

// Unknown returns the result Validate gives email when the DNS gives no
// verdict on its domain, for the given reason ([ReasonDNSTimeout] when no
// nameserver answered, [ReasonDNSServfail] when they answered with a
// failure), without asking the DNS: syntax checked, the domain neither
// shown to exist nor to have mail servers, status UNKNOWN with the score
// the validator gives it, and what the address alone tells (suggestion,
// provider, role, alias). An address whose verdict needs no DNS (bad
// syntax, an address literal, a reserved or blocked domain) gets that
// verdict, as from Validate. opts are those of Validate: [WithSource]
// sets meta.source; nothing is probed. A batch worker that gives up on an
// address completes its job with it, so that the job's result is the one
// a single validation gives in the same situation.
func (v *Validator) Unknown(email string, reason Reason, opts ...CallOption) Result {
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	res := Result{
		Email: email,
		Confidence: Confidence{
			AliasStatus:       AliasMaybeNot,
			EquivalentDomains: []string{},
		},
		Provider: Provider{Name: "Unknown"},
		Meta:     Meta{Source: cmp.Or(o.source, v.cfg.Source)},
	}
	v.unjudged(email, reason, &res)
	if v.cfg.Prober != nil && res.SMTP == nil {
		res.SMTP = &SMTPResult{Mailbox: MailboxUnknown, Detail: "not probed: the address is " + string(res.Confidence.Status)}
	}
	return res
}

// unjudged fills res as [Validator.check] does when the domain's lookup
// ends in outcomeUnknown for reason.
func (v *Validator) unjudged(email string, reason Reason, res *Result) {
	addr, info, final := v.judgeWithoutDNS(email, res)
	if final {
		return
	}
	domain := addr.ASCIIDomain
	if info == nil {
		// What resolveDomain and refine make of a lookup that failed.
		info = &domainInfo{
			outcome:   outcomeUnknown,
			dnsReason: cmp.Or(reason, ReasonDNSTimeout),
			class:     v.classifier.classifyDomain(domain, nil),
			suggest:   v.suggester.suggest(domain, true),
		}
		v.refine(domain, info, true)
		res.Confidence.Status = statusOf(info)
		res.Reason = reasonOf(info)
		res.Provider.Name = info.class.provider
	}
	v.describe(addr, info, res)
}
