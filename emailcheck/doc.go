// Package emailcheck tells whether an email address is deliverable and
// classifies it: syntax, DNS (MX, with A/AAAA fallback on request),
// disposable, role and alias detection, provider, score and status.
//
// It is pure and self-contained: no storage, no HTTP. A [Validator] is safe
// for concurrent use and caches DNS answers, so one Validator should serve a
// whole process.
//
//	v, err := emailcheck.New(nil) // nameservers from /etc/resolv.conf
//	if err != nil { ... }
//	defer v.Close()
//	res, err := v.Validate(ctx, "jane.doe+news@gmail.com")
//	// res.Confidence.Status == emailcheck.StatusLikely
//	// *res.Confidence.CanonicalEmail == "janedoe@gmail.com"
//
// [Validator.ValidateMany] validates a list of any length with bounded
// concurrency and back-pressure, yielding results in input order.
//
// # Syntax
//
// Addresses are judged as RFC 5321 mailboxes under a deliverability
// profile; [ParseAddress] documents it in full. Quoted local parts and
// address literals are off by default ([Config.AllowQuotedLocal],
// [Config.AllowAddressLiteral]); non-ASCII local parts (RFC 6531) are on,
// for letters and marks of every script, but characters that are invisible
// or mean nothing are refused in the local part and the domain alike
// ([ErrInvisible]: zero-width spaces and joiners, the soft hyphen,
// bidirectional overrides, the byte-order mark, private-use and unassigned
// code points), since they make one address look like another. Input is
// never trimmed or otherwise repaired.
//
// # DNS
//
// Queries go over the wire with github.com/miekg/dns to [Config.Nameservers]
// (default: /etc/resolv.conf), with EDNS0, and TCP when a UDP answer is
// truncated. UDP queries to a server share 16 connected sockets, each
// replaced by a new one (a new random source port) after 256 queries; an
// answer is taken only when its message id and question match a query
// waiting on that socket, so late, duplicate and forged answers are
// dropped. A CNAME at the domain is followed.
//
// The validator paces its queries to each nameserver as TCP paces its
// segments. A retransmission timeout (RTO) follows from the round trips
// measured (RFC 6298: smoothed RTT plus four times its variation, between
// 50ms and [Config.QueryTimeout], doubled after a timeout): a query
// unanswered after it is sent again ([Config.Retries]), to the next
// nameserver when several answer about as fast, while the earlier
// attempts' answers are still taken, so a lost answer costs about one
// RTO. A query whose RTO passes while the server is still answering the
// queries sent before it, and none sent half a round trip after it, is
// waiting in the server's queue (a loaded machine, a burst), not lost: it
// waits on until it is answered, passed over, or has waited
// [Config.QueryTimeout], rather than lengthen the queue with a
// retransmission. A window bounds the
// queries in flight to each server: it starts at 256 and quadruples every
// round trip while every query is answered (the first flight); a query of
// it left unanswered for two round trips while later ones were answered
// ends that, and the window falls to twice the answers that came; then it
// doubles every round trip (slow start), then grows by one per round trip, and halves when the
// server drops a query (a question answered to a retransmission after its
// first attempt timed out; a name that is never answered, such as a
// domain whose own servers are dead, shrinks nothing), so that a burst of
// thousands of lookups never overflows a resolver's queue, and no one's
// dead domains slow the others' lookups. A burst that follows a time
// with nothing in flight (32 queries or more at once) is a first flight
// again, from the window or 256, whichever is less: the server may take
// less than when the window grew (it restarted with a smaller buffer, or
// got busy), and a hole shows that within two round trips, before the
// dropped queries are sent again (TCP's restart after idle, RFC 5681
// §4.1). Queries beyond the window wait their turn, first attempts
// before retries. A nameserver whose RTO doubled with nothing answered
// since is silent: while another answers, queries pass it over, however
// the RTOs compare (a dead server's backed-off guess may be below a live
// one's measured on a loaded host), but for one probe each time its RTO
// passes, and the queries waiting for a place at it pick a server again
// when its RTO doubles. A nameserver
// whose port refuses (ICMP port or host unreachable: it restarts, or is
// not there yet) is an outage, not a failure of the names asked: the
// queries wait for it, trying again after 20 ms, doubling to 500 ms, for
// twice [Config.QueryTimeout] (4 s by default), and the refused attempts
// use none of them up, so a resolver restart costs the lookups in flight
// a short wait, not their verdicts. A server that has refused for longer
// than that without answering since is down: lookups then fail at once
// (the canary's ping, or any answer, ends it).
// [Validator.ResolverStats] reports each server's window, queries in
// flight and waiting, smoothed RTT and RTO.
//
// A zone (a registrable domain, per query type) whose names go unanswered
// while the nameservers answer others, as behind a recursive resolver
// waiting on the zone's dead servers, is remembered, but no name is
// failed without asking. While one of its names is retransmitted, the
// others wait for its outcome before sending; once a name timed
// out on every attempt, the zone is marked for [Config.FailureTTL]: every
// name under it is still asked, but only once, never again after a
// timeout, and behind the other names' first attempts, so that a thousand
// dead names under one zone cost about one query each. A live name under
// it (gmail.com beside a never-answered dead.gmail.com) is answered to
// that query, and any answer under the zone clears the mark; a name that
// timed out is UNKNOWN, its failure cached for FailureTTL.
//
// [Validator.PingNameservers] tells whether the DNS answers: the root's
// NS records, which a resolver answers from its cache, then a random
// name under each of [Config.CanaryZones] (by default the top-level
// domains com, net and org, never zones of the addresses validated),
// which it must reach the zone's servers to answer. NOERROR or NXDOMAIN
// for any of them passes; the resolver is judged cut off from the DNS
// only when every one fails (SERVFAIL, REFUSED) or goes unanswered while
// the root answers. A SERVFAIL for a domain is then the resolver's (no
// answer, dns_timeout) only when the canary fails too.
//
// The outcome of a domain is:
//
//   - NXDOMAIN: the domain does not exist (INVALID_DOMAIN), when the
//     answer carries the SOA of a zone the name is in (RFC 2308; a
//     filtering resolver's policy zone does not count) and the nameservers have
//     shown that they tell the truth: they answer NOERROR for the root's
//     SOA and a top-level domain's (the first canary zone's), checked
//     every [Config.TrustCheckInterval], and after an NXDOMAIN without
//     an SOA at most every 5 s. Otherwise (a captive portal, a broken sandbox or a
//     filtering resolver that denies every name) the address is UNKNOWN,
//     dns_untrusted, the denial is logged once, and
//     [Validator.PingNameservers] fails with [ErrResolverUntrusted] until
//     the nameservers answer truthfully again; no resolver's word alone
//     makes an address INVALID_DOMAIN.
//   - NOERROR with at least one usable MX host: LIKELY (or DISPOSABLE).
//     MX hosts that are the root ("."), "localhost" or an IP address are
//     not usable; a null MX (RFC 7505, a single "0 .") means "no mail".
//     A host is usable only if it resolves to a public address: hosts are
//     resolved (A and AAAA side by side) in preference order, stopping at
//     the first that does. A host that is NXDOMAIN, has neither A nor AAAA,
//     or resolves only to private, loopback or special-purpose addresses
//     (10.0.0.0/8, 127.0.0.1, 0.0.0.0, the documentation ranges, ..., and
//     the NAT64, 6to4, Teredo, IPv4-mapped and -compatible forms of those:
//     package emailcheck/netpolicy's rule) is
//     not; [Config.AllowPrivateMX] accepts the latter, for intranets and
//     tests. When no host is usable and a host's lookup failed, the domain
//     is UNKNOWN, never NO_MX_RECORDS. Addresses that come in the MX
//     answer's additional section are used without a query; host lookups
//     are cached and shared across domains like domain lookups, so the
//     thousands of domains of one provider cost one host lookup.
//   - NOERROR without a usable MX host: NO_MX_RECORDS ("no valid mail
//     servers"), even when the domain has A/AAAA records: parked and typo
//     domains often have only those. With [Config.ImplicitMX] the RFC 5321
//     §5.1 fallback is accepted: A/AAAA records that are not loopback,
//     unspecified, link-local or multicast make the domain LIKELY with
//     mx_records=false and a lower score. MX and address queries then run
//     side by side.
//   - SERVFAIL, REFUSED, a timeout, or an answer that cannot be parsed or
//     is for another question: UNKNOWN. DNS trouble is never reported as
//     INVALID_DOMAIN.
//
// Answers are cached (an LRU of [Config.CacheSize] domains): positive ones
// for their TTL and negative ones for the SOA minimum (RFC 2308), both
// clamped to [[Config.MinTTL], [Config.MaxTTL]]; failures only for the
// short [Config.FailureTTL]. Concurrent lookups of one domain share one set
// of queries. A lookup never outlasts its timeouts and retries, whatever the
// caller's context allows; a caller whose context ends stops waiting at once.
//
// Reserved and special-use names (the TLDs test, example, invalid,
// localhost, local, onion, arpa, alt and internal, and example.com/.net/.org)
// and [Config.BlockDomains] are INVALID without a query; their syntax is
// still reported true.
//
// # Status
//
// The first that applies wins: INVALID_FORMAT (syntax false), INVALID
// (reserved, special-use or blocked domain; a literal that is not a public
// unicast address), INVALID_DOMAIN (NXDOMAIN), UNKNOWN (DNS could not
// answer), NO_MX_RECORDS, DISPOSABLE, LIKELY.
//
// With a [MailboxProber] ([Config.Prober]; package emailcheck/smtpprobe
// asks over SMTP), a LIKELY address is probed and becomes DELIVERABLE (the
// mailbox was accepted and a random one at the domain refused),
// UNDELIVERABLE (the mailbox was refused as unknown) or CATCH_ALL (the
// domain accepts any address); a probe that could not decide
// (greylisting, a block, a timeout) leaves it LIKELY. Invalid, disposable
// and mail-less addresses are never probed. Results then carry an "smtp"
// object ([SMTPResult]); without a prober they carry none and are exactly
// as before. A call may turn the probe off ([WithoutProbe], for anonymous
// callers) or name the account it is made for ([WithAccount]), whose
// budget of probes [Config.ProbeBudget] decides.
//
// An address literal (when allowed) is treated like a domain with only an A
// record: NO_MX_RECORDS by default, LIKELY with ImplicitMX.
//
// # Reason
//
// Result.Reason ("reason" in JSON) names the cause within the status:
//
//	status          reasons
//	INVALID_FORMAT  invalid_syntax
//	INVALID         reserved_domain, blocked_domain
//	INVALID_DOMAIN  no_such_domain
//	UNKNOWN         dns_timeout, dns_servfail, dns_untrusted, mx_lookup_failed
//	NO_MX_RECORDS   no_mx, null_mx, mx_invalid, mx_unresolvable, mx_private
//	DISPOSABLE      disposable_list, disposable_mx_host, disposable_mx
//	LIKELY          valid, greylisted (a probe put off with a 4xx)
//	UNDELIVERABLE   mailbox_rejected
//	CATCH_ALL       catch_all
//	DELIVERABLE     mailbox_accepted
//
// A reason is cached with its domain's verdict, like the status. [Reasons]
// lists them; the set may grow.
//
// # Score
//
// confidence_score is deterministic: the status sets a base, and each piece
// of bad evidence subtracts from it. LIKELY and CATCH_ALL never fall below
// 50; DELIVERABLE is 100, the only way to 100; every other status stays
// below 50.
//
//	status          base    evidence                     penalty
//	DELIVERABLE      100    (penalties do not apply)
//	LIKELY            90    role account                     -15
//	CATCH_ALL         80    (as LIKELY, floored at 50)
//	UNDELIVERABLE      5    (penalties do not apply)
//	UNKNOWN           40    implicit MX (A/AAAA only)        -25
//	DISPOSABLE        20    "+tag" on an unknown provider     -5
//	NO_MX_RECORDS     10    (5 for a null MX)
//	INVALID_DOMAIN     5
//	INVALID            0    (penalties do not apply)
//	INVALID_FORMAT     0    (penalties do not apply)
//
// The result is floored at 50 for LIKELY and at 0 otherwise. Examples: a
// plain address on a domain with MX: 90; admin@ on it: 75; a role account on
// an A-only domain under ImplicitMX: 50.
//
// # Classification
//
// Disposable domains. An address is disposable when its domain, or a parent
// of it up to and including the registrable domain (the public suffix plus
// one label, from the Public Suffix List), is on the embedded list of
// temporary-mailbox domains or in Config.DisposableDomains; a bare public
// suffix never matches. It is also disposable when the registrable domain
// of any of its MX hosts is on that list: a custom domain whose mail goes to
// a burner service. And it is disposable when one of its MX hosts has a
// public address that the MX hosts of listed burner domains have too, of
// at least three different registrable domains, outnumbering the other
// domains seen there before and after them: the validator learns those
// addresses as it resolves
// domains, within the DNS cache (bounded by [Config.CacheSize], expiring
// with the host answers, off when caching is); it applies to lookups made
// after the learning. One or two listed domains teach nothing, nor do a
// few on a shared web host among as many that are not listed, nor one whose mail
// goes to a provider, a gateway, a shared mail host or a parking service;
// every domain an address condemns counts against it as a quarter of an
// unlisted domain seen before, so that a burner farm's address stays
// marked while its listed domains keep appearing there, and a wrong mark
// still wears out. An operator's own list, read from a file or a URL and
// reloaded while the service runs, is merged with the embedded ones
// through [Config.DisposableFeed] (see [DisposableFeed]: a new list is
// taken only whole and when it passes its checks of size and format, and
// cached verdicts are judged again against it without a query). Domains on the embedded allowlist, the known-domain model
// (data/known_domains.txt) or [Config.AllowDomains], matched on the domain
// and its parents the same way, are never disposable, whatever their MX
// hosts; an allowed MX host does not make a domain disposable either. Configured entries are trimmed,
// lower-cased, stripped of a trailing dot and converted to A-labels; an
// entry that is not a domain name, or is a public suffix, makes New fail.
// The embedded lists are disposable-email-domains (CC0) and its former
// allowlist, copied on 2026-11-21, merged with FGRibreau/mailchecker 6.0.21
// (MIT) less every free, popular and allowlisted provider: about 60,700
// domains, loaded in about 5 ms and 4 MB of heap by New.
//
// Role addresses. The local part is a role mailbox (info, support,
// no-reply, ...) when it is on the embedded list from
// mixmaxhq/role-based-email-addresses (MIT), compared without regard to
// ASCII case after removing its "+tag". At providers that use dashes
// (Yahoo) it is also a role mailbox when the part before its "-tag" is, so
// both no-reply and sales-2024 are. A local part with non-ASCII characters
// is never a role address.
//
// Provider. provider.name comes from the MX hosts, most preferred first: the
// first host under a known provider's or gateway's domain names it (Google,
// Microsoft, Yahoo, Apple iCloud, Proton, Fastmail, Zoho, Yandex, Mail.ru,
// GMX, Mimecast, Proofpoint, Barracuda, Cisco Secure Email, Amazon SES, ...).
// Failing that, well-known consumer domains are recognised by name
// (gmail.com is Google, hotmail.com is Microsoft, yahoo.* except
// yahoo.co.jp is Yahoo). Failing that, the name is the registrable domain of
// the most preferred MX host (a self-hosted domain reports itself), and
// "Unknown" when there is no MX host. A domain that does not exist
// (NXDOMAIN) is "Unknown" whatever its name, and no provider's alias rule
// applies to it. Nor is a domain with a typo suggestion named after the
// provider it misspells: yahoo.cm parked at a sale service is named by its
// MX host, and Yahoo's "-tag" rule applies only where an MX host is
// Yahoo's.
//
// Free providers. provider.is_free is true when anyone can open a mailbox
// at the registrable domain at no cost (gmail.com, outlook.com, yahoo.*,
// gmx.*, mail.ru, qq.com, Tuta's domains, ...): the embedded list from
// AfterShip's email-verifier (MIT), without its disposable and reserved
// domains and without the company, institution, ISP and typo domains
// that data/free_exclusions.txt names with a reason each, corrected by the
// known-domain model's facts (paid-only providers such as Fastmail, Posteo,
// Runbox and Hushmail, ISPs' and organizations' mail are not free). A
// domain with a suggestion is a typo and never free.
// [Config.FreeDomains] and [Config.NotFreeDomains] add and remove domains.
// It is a flag for the caller, never a penalty: the score ignores it.
//
// Typo suggestions. did_you_mean is the whole address with the domain the
// person probably meant, or null. It is computed from the lookups the
// validation made anyway, never changes the status or the score, and is
// never the input's own domain. Targets come from the known-domain model
// (data/known_domains.txt): global providers, their country variants,
// regional providers and ISPs, each with a weight; organizations and small
// providers near their names are known too, and never corrected nor
// targets. A misspelt top-level domain (.con, .cmo, .coom, .ocm, ...) is
// fixed on any domain, going on to a target only when one more edit
// reaches it (ibm.con is ibm.com, gmial.con is gmail.com). A slip of the
// fingers in the suffix of a known name (a letter replaced by its QWERTY
// neighbour, two letters swapped, one doubled or left out) is fixed for
// every country's suffix, second-level ones too, against the public
// suffix list: gmx.ed is gmx.de, freemail.hy freemail.hu, hotmail.con.ar
// hotmail.com.ar, yahoo.co.ul yahoo.co.uk. Where no such suffix exists it
// is fixed whatever the domain's MX hosts; where it does (terra.com.bt,
// .com.bt being Bhutan's) only when the domain receives no mail. A global
// provider's name with one letter doubled under its own suffix
// (gmaill.com, outlookk.com) is corrected wherever its mail goes. A domain shown
// not to receive mail (NXDOMAIN, or no usable MX) gets the nearest target
// within two edits, one for domains of six characters or fewer, by
// optimal-string-alignment distance; ties go to the heavier target, then
// to the first by name, so the same input always gives the same answer,
// but two edits on a name of six characters or fewer that reach two
// targets give none unless one is ten times the other's weight (mali.uz
// may be mail.kz or mail.az; yahpo.co is yahoo.com's, not yahoo.cl's). A
// domain that receives mail gets one only where its MX hosts say typo: it
// is disposable, or its mail goes to a parking service (strong signs:
// data/parking_mx.txt names the services' hosts, and a host of another
// name at an address a listed parking host was seen at counts too), or to
// a registrar's default mail host (GoDaddy's secureserver.net, Namecheap's
// forwarding; as strong, but never for a domain of six characters or
// fewer, and a name one edit from a target's must be seven characters
// long, or five for a global provider's or when the edit is a doubled
// letter or two letters swapped: hotmial.de and yahooo.es are corrected,
// globe.com and libera.it are not), or to a host that is neither its own
// (below its registrable domain) nor a provider's, gateway's or shared
// mail host's (a weak sign, which every customer of a web host no list
// names shows too); then a global provider may be two edits away, any
// other target one. On the weak sign alone a
// domain of six characters or fewer is never corrected, and the name
// before the first dot may differ from the target's by one edit at most:
// none when it is shorter than five characters (seven unless the target
// is a global provider, or six when the edit is a doubled letter or two
// letters swapped); a target of small size (a small or legacy provider)
// is reached only by such a doubled or swapped letter, or by its very name
// with a slip in the suffix. So naver.co, comcats.net, seznma.cz and
// ziggoo.nl are corrected, but haver.com, love.de and libera.it are not. A domain whose DNS could not answer
// gets only the fixes that need no DNS. A known domain (the model, the free
// list, the provider index) is never corrected.
//
// Aliases. Sub-addressing rules are known for consumer Gmail (gmail.com and
// googlemail.com: "+tag" is ignored and so are dots), for Google Workspace
// domains (by MX), Microsoft (consumer domains and Microsoft 365), Apple
// iCloud, Proton, Fastmail and Zoho ("+tag" is ignored), and for Yahoo
// ("-tag" is ignored; Yahoo mailbox names cannot contain "+", so a "+" there
// is not a tag). A tag under a known rule is ALIAS_CONFIRMED; a "+tag" where
// the rule is not known (other providers, gateways, self-hosted mail) is
// ALIAS_POSSIBLE; anything else is MAYBE_NOT_ALIAS. A tag starts at the
// first separator and runs to the end of the local part; it may be empty
// ("john+@gmail.com"), but a separator at the very start ("+john") is part
// of the name, not a tag. When an alias is detected, canonical_email is the
// address without the tag, with the domain in A-label form. Under a known
// rule the local part is lower-cased, since those providers ignore case; for
// ALIAS_POSSIBLE it is kept as written. For consumer Gmail the dots are
// removed too and googlemail.com becomes gmail.com. canonical_email is null
// when no alias is detected, even for a Gmail address with dots: dots are
// not a tag.
//
// Equivalent domains. equivalent_domains lists the other domains that reach
// the same mailbox: gmail.com and googlemail.com; icloud.com, me.com and
// mac.com; proton.me, protonmail.com, protonmail.ch and pm.me; the yandex
// domains (yandex.ru, yandex.com, ya.ru, yandex.by, yandex.kz, yandex.ua,
// yandex.com.tr). It is sorted, and empty for any other domain. Microsoft's
// outlook.com, hotmail.com and live.com are separate mailboxes.
//
// # Testing
//
// Package [github.com/validmail/validmail/emailcheck/dnstest] serves zones
// held in Go values on loopback, so tests need no network.
package emailcheck
