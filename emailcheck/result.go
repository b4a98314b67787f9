package emailcheck

// Status is the overall verdict on an address, reported as confidence.status.
// The set is open-ended: callers should treat an unrecognised value like
// [StatusUnknown].
type Status string

// Statuses, in the order of precedence used by [Validator.Validate]: the first
// that applies wins.
const (
	// StatusInvalidFormat: the address is not syntactically acceptable.
	StatusInvalidFormat Status = "INVALID_FORMAT"
	// StatusInvalid: the domain is reserved or special-use (RFC 2606, RFC 6761)
	// or blocked by configuration; no DNS query is made.
	StatusInvalid Status = "INVALID"
	// StatusInvalidDomain: DNS answered NXDOMAIN: the domain does not exist.
	StatusInvalidDomain Status = "INVALID_DOMAIN"
	// StatusUnknown: DNS could not answer (SERVFAIL, REFUSED, timeout). The
	// address may be fine; nothing is claimed either way.
	StatusUnknown Status = "UNKNOWN"
	// StatusNoMXRecords: the domain exists but has no usable mail server.
	StatusNoMXRecords Status = "NO_MX_RECORDS"
	// StatusDisposable: the domain or its mail servers belong to a temporary
	// (burner) mailbox provider.
	StatusDisposable Status = "DISPOSABLE"
	// StatusLikely: syntax correct, domain verified with a usable mail server,
	// not disposable.
	StatusLikely Status = "LIKELY"

	// The statuses below come only from a mailbox probe
	// ([Config.Prober]); they replace LIKELY.

	// StatusUndeliverable: the domain's mail server refused the mailbox as
	// unknown.
	StatusUndeliverable Status = "UNDELIVERABLE"
	// StatusCatchAll: the domain's mail server accepts any address, so
	// its acceptance of this one proves nothing.
	StatusCatchAll Status = "CATCH_ALL"
	// StatusDeliverable: the mail server accepted the mailbox, and refused
	// a random one at the same domain: the only way to a score of 100.
	StatusDeliverable Status = "DELIVERABLE"
)

// Statuses returns every status a validator reports, in the order of
// precedence.
func Statuses() []Status {
	return []Status{StatusInvalidFormat, StatusInvalid, StatusInvalidDomain, StatusUnknown, StatusNoMXRecords,
		StatusDisposable, StatusLikely, StatusUndeliverable, StatusCatchAll, StatusDeliverable}
}

// AliasStatus reports whether the local part uses sub-addressing.
type AliasStatus string

// Alias statuses.
const (
	// AliasConfirmed: the address carries a tag under a rule the provider is
	// known to apply (for example gmail's "+tag").
	AliasConfirmed AliasStatus = "ALIAS_CONFIRMED"
	// AliasPossible: the address carries a "+tag" but the provider's rule is
	// not known.
	AliasPossible AliasStatus = "ALIAS_POSSIBLE"
	// AliasMaybeNot: no sub-address tag was found.
	AliasMaybeNot AliasStatus = "MAYBE_NOT_ALIAS"
)

// Sources for [Meta.Source].
const (
	SourceAPI       = "api"
	SourceAPIAsync  = "api_async"
	SourceDashboard = "dashboard"
	SourceDemo      = "demo"
)

// Result is the outcome of validating one address. Its JSON encoding is the
// validation-result object of the HTTP API, without the requestId that the
// HTTP layer adds.
type Result struct {
	Email       string      `json:"email"`
	Validations Validations `json:"validations"`
	Confidence  Confidence  `json:"confidence"`
	Provider    Provider    `json:"provider"`
	// DidYouMean is the whole address the person probably meant, when the
	// domain looks like a misspelling of a popular provider or has a
	// misspelt top-level domain ("jane@gmail.com" for "jane@gmial.com");
	// nil otherwise. It never changes the status or the score.
	DidYouMean *string `json:"did_you_mean"`
	// Reason says why the address got its status ("no_mx", "dns_timeout",
	// "disposable_list", …): see [Reason].
	Reason Reason `json:"reason"`
	// SMTP is the mailbox probe's outcome; nil, and absent from the JSON,
	// when the validator has no [MailboxProber].
	SMTP *SMTPResult `json:"smtp,omitempty"`
	Meta Meta        `json:"meta"`

	// MXHosts lists the usable mail exchangers found for the domain, most
	// preferred first. It is not part of the JSON encoding.
	MXHosts []string `json:"-"`
}

// Validations holds the four boolean checks.
type Validations struct {
	Syntax       bool `json:"syntax"`
	DomainExists bool `json:"domain_exists"`
	MXRecords    bool `json:"mx_records"`
	IsDisposable bool `json:"is_disposable"`
}

// Confidence holds the score, status and classification of an address.
type Confidence struct {
	// Score is 0 to 100; see the package documentation for the table.
	Score       int         `json:"confidence_score"`
	Status      Status      `json:"status"`
	IsRoleBased bool        `json:"is_role_based"`
	AliasStatus AliasStatus `json:"alias_status"`
	// CanonicalEmail is the base address when an alias is detected, else nil
	// (encoded as null).
	CanonicalEmail *string `json:"canonical_email"`
	// EquivalentDomains lists other domains that deliver to the same inbox;
	// never nil (encoded as []).
	EquivalentDomains []string `json:"equivalent_domains"`
}

// Provider names the mailbox provider.
type Provider struct {
	// Name is a display name such as "Google" or "Microsoft", else the
	// registrable domain of the primary mail exchanger, else "Unknown".
	Name string `json:"name"`
	// IsFree reports a free consumer mailbox provider (gmail.com,
	// outlook.com, yahoo.*, gmx.*, mail.ru, qq.com, ...), judged on the
	// registrable domain. It is a flag, never a penalty: the score does not
	// depend on it.
	IsFree bool `json:"is_free"`
}

// Meta describes how the result was produced.
type Meta struct {
	// LatencyMS is the time spent inside Validate, in milliseconds.
	LatencyMS int64 `json:"latency_ms"`
	// Source is the origin of the validation: "api", "api_async",
	// "dashboard" or "demo".
	Source string `json:"source"`
}
