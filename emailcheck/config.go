package emailcheck

import (
	"log/slog"
	"time"
)

// Config configures a [Validator]. The zero value (or a nil *Config) gives the
// documented defaults; New validates it once.
type Config struct {
	// Nameservers are the DNS servers to query, as "host:port". Default: the
	// nameservers of /etc/resolv.conf.
	Nameservers []string

	// QueryTimeout bounds one DNS exchange with one server. Default 2s.
	QueryTimeout time.Duration
	// Retries is how many more times a query that timed out or failed is
	// sent, rotating across Nameservers. Default 1; negative means none.
	// A SERVFAIL or REFUSED is retried only when there is another server
	// to ask; a timeout is retried on the same server too.
	Retries int
	// MaxInFlight bounds the DNS queries in flight at once. Default 1024.
	MaxInFlight int

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

	// AllowQuotedLocal accepts quoted local parts ("john doe"@example.com).
	AllowQuotedLocal bool
	// AllowAddressLiteral accepts address literals (user@[192.0.2.1]).
	AllowAddressLiteral bool
	// ASCIILocalOnly rejects non-ASCII local parts (SMTPUTF8, RFC 6531),
	// which are accepted by default.
	ASCIILocalOnly bool

	// DisposableDomains are added to the embedded disposable-domain list.
	DisposableDomains []string
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
