package emailcheck

// Reason says why an address got its status: a finer cause within it, as
// commercial verifiers' sub-statuses do. Each status has its own reasons
// (the package documentation has the table); like [Status], the set is
// open-ended, and a result made by hand or stored by an older version may
// carry none ("").
type Reason string

// Reasons, by the status they come with.
const (
	// ReasonValid (LIKELY): a usable mail server, not disposable.
	ReasonValid Reason = "valid"
	// ReasonGreylisted (LIKELY): the mailbox probe was put off with a 4xx
	// reply (greylisting, throttling): DNS's verdict stands.
	ReasonGreylisted Reason = "greylisted"

	// ReasonInvalidSyntax (INVALID_FORMAT): not an acceptable mailbox.
	ReasonInvalidSyntax Reason = "invalid_syntax"

	// ReasonReservedDomain (INVALID): a reserved or special-use name
	// (example.com, .test, .local, …), or an address literal that is not
	// a public unicast address.
	ReasonReservedDomain Reason = "reserved_domain"
	// ReasonBlockedDomain (INVALID): a domain of [Config.BlockDomains].
	ReasonBlockedDomain Reason = "blocked_domain"

	// ReasonNoSuchDomain (INVALID_DOMAIN): DNS answered NXDOMAIN.
	ReasonNoSuchDomain Reason = "no_such_domain"

	// ReasonDNSTimeout (UNKNOWN): no nameserver answered in time.
	ReasonDNSTimeout Reason = "dns_timeout"
	// ReasonDNSServfail (UNKNOWN): nameservers answered with a failure
	// (SERVFAIL, REFUSED) or no usable answer.
	ReasonDNSServfail Reason = "dns_servfail"
	// ReasonDNSUntrusted (UNKNOWN): the nameservers answered NXDOMAIN, but
	// they cannot be believed: they deny names that must exist (the root,
	// a top-level domain), or the answer lacked the zone's SOA (RFC
	// 2308), as from captive portals, broken sandboxes and some filtering
	// resolvers that deny every name ([ErrResolverUntrusted]).
	ReasonDNSUntrusted Reason = "dns_untrusted"
	// ReasonMXLookupFailed (UNKNOWN): the domain has MX hosts, but DNS
	// could not resolve any of them.
	ReasonMXLookupFailed Reason = "mx_lookup_failed"

	// ReasonNoMX (NO_MX_RECORDS): no MX record (and no address record
	// accepted under [Config.ImplicitMX]); also an address literal
	// without ImplicitMX.
	ReasonNoMX Reason = "no_mx"
	// ReasonNullMX (NO_MX_RECORDS): the domain says it takes no mail
	// (RFC 7505).
	ReasonNullMX Reason = "null_mx"
	// ReasonMXInvalid (NO_MX_RECORDS): every MX record names localhost,
	// an IP address or the root.
	ReasonMXInvalid Reason = "mx_invalid"
	// ReasonMXUnresolvable (NO_MX_RECORDS): the MX hosts do not exist or
	// have no address.
	ReasonMXUnresolvable Reason = "mx_unresolvable"
	// ReasonMXPrivate (NO_MX_RECORDS): the MX hosts have only private,
	// loopback or reserved addresses ([Config.AllowPrivateMX] accepts
	// them).
	ReasonMXPrivate Reason = "mx_private"

	// ReasonDisposableList (DISPOSABLE): the domain or a parent is on a
	// disposable list.
	ReasonDisposableList Reason = "disposable_list"
	// ReasonDisposableMXHost (DISPOSABLE): an MX host's domain is on a
	// disposable list.
	ReasonDisposableMXHost Reason = "disposable_mx_host"
	// ReasonDisposableMX (DISPOSABLE): an MX host has an address where
	// listed burners' mail servers live.
	ReasonDisposableMX Reason = "disposable_mx"

	// ReasonMailboxRejected (UNDELIVERABLE): the mail server refused the
	// mailbox as unknown.
	ReasonMailboxRejected Reason = "mailbox_rejected"
	// ReasonCatchAll (CATCH_ALL): the mail server accepts any address.
	ReasonCatchAll Reason = "catch_all"
	// ReasonMailboxAccepted (DELIVERABLE): the mail server accepted the
	// mailbox and refused a random one.
	ReasonMailboxAccepted Reason = "mailbox_accepted"
)

// Reasons returns every reason, grouped by status in the order of
// precedence.
func Reasons() []Reason {
	return []Reason{
		ReasonInvalidSyntax,
		ReasonReservedDomain, ReasonBlockedDomain,
		ReasonNoSuchDomain,
		ReasonDNSTimeout, ReasonDNSServfail, ReasonDNSUntrusted, ReasonMXLookupFailed,
		ReasonNoMX, ReasonNullMX, ReasonMXInvalid, ReasonMXUnresolvable, ReasonMXPrivate,
		ReasonDisposableList, ReasonDisposableMXHost, ReasonDisposableMX,
		ReasonValid, ReasonGreylisted,
		ReasonMailboxRejected, ReasonCatchAll, ReasonMailboxAccepted,
	}
}

// reasonOf returns the reason of the status [statusOf] gives info.
func reasonOf(info *domainInfo) Reason {
	switch info.outcome {
	case outcomeNXDomain:
		return ReasonNoSuchDomain
	case outcomeUnknown:
		if info.dnsReason != "" {
			return info.dnsReason
		}
		return ReasonDNSServfail
	case outcomeHostsUnknown:
		return ReasonMXLookupFailed
	case outcomeNullMX:
		return ReasonNullMX
	case outcomeNoMX:
		if info.dnsReason != "" {
			return info.dnsReason
		}
		return ReasonNoMX
	}
	if info.class.disposable {
		switch info.class.reason {
		case disposableMXHost:
			return ReasonDisposableMXHost
		case disposableMX:
			return ReasonDisposableMX
		}
		return ReasonDisposableList
	}
	return ReasonValid
}
