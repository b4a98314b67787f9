package emailcheck

import (
	"context"
	"log/slog"
	"time"
)

// Config configures a [Validator]. The zero value (or a nil *Config) gives the
// documented defaults; New validates it once.
type Config struct {
	// Nameservers are the DNS servers to query, as "host:port". Default: the
	// nameservers of /etc/resolv.conf.
	Nameservers []string

	// QueryTimeout is the longest a query waits for its answer from one
	// server, and so the ceiling of the retransmission timeout (RTO),
	// which is otherwise learnt per nameserver from the round trips
	// measured (smoothed RTT plus four times its variation, at least
	// 50ms; 400ms, or QueryTimeout when less, before the first answer).
	// It doubles after a timeout only when the server answered no query
	// sent after the one lost; a name that alone goes unanswered backs
	// off only its own retransmissions, and its zone (registrable domain
	// and query type) is then marked for FailureTTL: every name under it
	// is still asked, but sent only once, not retransmitted, until a name
	// under it is answered. Default 2s.
	QueryTimeout time.Duration
	// Retries is how many more times a query is sent when its answer has
	// not come within the server's RTO, or a server failed (SERVFAIL,
	// REFUSED) while there is another to ask. A retry goes to the next
	// of the Nameservers that answer about as fast as the fastest, and
	// the earlier attempts' answers are still taken until each has waited
	// QueryTimeout. Default 3; negative means none.
	Retries int
	// MaxInFlight bounds the DNS queries in flight at once to each
	// nameserver: the most its window grows to. The window starts at 256,
	// grows by three queries per answer, quadrupling every round trip,
	// until a query goes missing (then by one per answer, and by one per
	// round trip past the threshold), and halves when
	// an answer goes missing, so that a burst of lookups never floods a
	// resolver; a burst after a time with nothing in flight starts again
	// from 256 at most; queries beyond it wait their turn. Default 1024.
	MaxInFlight int

	// CanaryZones are the zones under which [Validator.PingNameservers]
	// asks for a random name to prove that the nameservers recurse: the
	// resolver is judged cut off only when the question under every one
	// of them fails (SERVFAIL, REFUSED) or goes unanswered while the root
	// answers; a NOERROR or NXDOMAIN passes. They are fixed, never taken
	// from the addresses validated. Default (empty): the top-level domains
	// com, net and org.
	CanaryZones []string

	// TrustCheckInterval is how long a verdict on whether the nameservers
	// tell the truth stands: an NXDOMAIN makes an address INVALID_DOMAIN
	// only when they answer NOERROR for the root's SOA and a top-level
	// domain's (the first canary zone's), and only with the zone's SOA in
	// the answer (RFC 2308); otherwise the address is UNKNOWN
	// ([ReasonDNSUntrusted]) and the denial is logged once. Checked again
	// after this interval, at once after an NXDOMAIN without an SOA.
	// Default [DefaultTrustCheckInterval].
	TrustCheckInterval time.Duration

	// CacheSize bounds how many domains the DNS cache holds. Default 100,000.
	// A negative value disables caching.
	CacheSize int
	// MinTTL and MaxTTL clamp how long a DNS answer is cached. Defaults 1m
	// and 24h. Negative answers are cached for the SOA minimum (RFC 2308),
	// within the same bounds.
	MinTTL, MaxTTL time.Duration
	// FailureTTL is how long a failed lookup (SERVFAIL, timeout) is cached,
	// to shed load from a struggling server. Default 5s; negative disables.
	FailureTTL time.Duration

	// ImplicitMX accepts a domain with no MX but with A/AAAA records as
	// mail-capable (RFC 5321 §5.1). Default false: such domains are
	// NO_MX_RECORDS.
	ImplicitMX bool
	// AllowPrivateMX accepts MX hosts whose addresses are all private,
	// loopback or otherwise not public (10.0.0.0/8, 127.0.0.1, the
	// documentation ranges, ...), for intranets and for tests that run
	// mail servers on loopback. Default false: an MX whose hosts resolve
	// only to such addresses is not a public mail server, and the domain
	// is NO_MX_RECORDS.
	AllowPrivateMX bool

	// Prober, when set, asks the mail servers of every LIKELY address
	// whether its mailbox exists (package emailcheck/smtpprobe does so over
	// SMTP), and results then carry an "smtp" object and may be
	// DELIVERABLE, UNDELIVERABLE or CATCH_ALL. Default nil: no SMTP
	// traffic at all, and results are exactly as without it.
	Prober MailboxProber
	// ProbeBudget, when set, is asked before each probe whether the
	// account the call is made for ([WithAccount]; "" for a call naming
	// none) may make one more; when it answers false the address is not
	// probed and keeps its DNS verdict. It is asked only for addresses the
	// Prober would be asked about, may be called concurrently and must
	// honor ctx. A fleet shares one budget by deciding it in a shared
	// store: httpapi/service counts it with the backend's rate limiter.
	// Default nil: no budget, every LIKELY address is probed.
	ProbeBudget func(ctx context.Context, account string) bool

	// AllowQuotedLocal accepts quoted local parts ("john doe"@example.com).
	AllowQuotedLocal bool
	// AllowAddressLiteral accepts address literals (user@[192.0.2.1]).
	AllowAddressLiteral bool
	// ASCIILocalOnly rejects non-ASCII local parts (SMTPUTF8, RFC 6531),
	// which are accepted by default.
	ASCIILocalOnly bool

	// DisposableDomains are added to the embedded disposable-domain list.
	DisposableDomains []string
	// DisposableFeed, when set, is an operator's disposable list, merged
	// with the embedded ones and reloaded while the Validator runs (see
	// [DisposableFeed]); the host runs its [DisposableFeed.Run]. Several
	// Validators may share one. Default nil: the embedded lists and
	// DisposableDomains only.
	DisposableFeed *DisposableFeed
	// AllowDomains are never reported as disposable, whatever the lists say.
	AllowDomains []string
	// FreeDomains are added to the embedded list of free consumer mailbox
	// providers (provider.is_free), and NotFreeDomains removed from it;
	// both match registrable domains.
	FreeDomains, NotFreeDomains []string
	// BlockDomains are always INVALID (with their subdomains); no DNS query
	// is made for them.
	BlockDomains []string

	// Source is reported as meta.source when a call does not set one.
	// Default "api".
	Source string

	// Logger receives debug logs of DNS failures. Default: discard.
	Logger *slog.Logger
}
