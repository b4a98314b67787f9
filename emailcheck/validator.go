package emailcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

// ErrClosed is returned by Validate after Close.
var ErrClosed = errors.New("emailcheck: validator closed")

// ErrConfig is matched (with errors.Is) by every error New returns for an
// invalid Config, and by those of the validator's parts configured apart,
// such as the SMTP prober of emailcheck/smtpprobe: the one sentinel of
// the validation side, as httpapi.ErrConfig is of the serving side.
var ErrConfig = errors.New("emailcheck: invalid configuration")

// Defaults for the zero values of Config and ManyOptions.
const (
	DefaultQueryTimeout = 2 * time.Second
	DefaultRetries      = 3
	DefaultMaxInFlight  = 1024
	DefaultCacheSize    = 100_000
	DefaultMinTTL       = time.Minute
	DefaultMaxTTL       = 24 * time.Hour
	DefaultFailureTTL   = 5 * time.Second
	DefaultConcurrency  = 1024
)

// resolvConfPath is where the system's nameservers are read from.
const resolvConfPath = "/etc/resolv.conf"

// Validator validates addresses. It is safe for concurrent use; create one
// and share it, so that its DNS cache and in-flight lookups are shared.
type Validator struct {
	cfg         Config
	syntax      SyntaxOptions
	resolver    *resolver
	classifier  *classifier
	suggester   *suggester
	cache       *lru.Cache[string, *domainInfo] // nil when caching is off
	flights     singleflight.Group
	hosts       *lru.Cache[string, *hostInfo] // MX hosts' addresses; nil when caching is off
	hostFlights singleflight.Group
	burners     *burnerAddrs // burners' MX addresses learned; nil when caching is off
	parked      *parkedAddrs // parking services' MX addresses learned; nil when caching is off
	blocked     []string
	budget      time.Duration // upper bound of one domain lookup
	counters    *counters

	base   context.Context // parent of every lookup; cancelled by Close
	cancel context.CancelFunc
	mu     sync.Mutex // guards closed and lookups.Add
	closed bool
	lookup sync.WaitGroup
}

// New returns a Validator configured by cfg; nil means all defaults. It
// reads /etc/resolv.conf when cfg names no nameservers, and fails on an
// invalid configuration. It starts no goroutines.
func New(cfg *Config) (*Validator, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.setDefaults(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cl, err := newClassifier(lists{disposable: c.DisposableDomains, allow: c.AllowDomains, free: c.FreeDomains, notFree: c.NotFreeDomains, feed: c.DisposableFeed})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	blocked := make([]string, 0, len(c.BlockDomains))
	for _, d := range c.BlockDomains {
		n, err := normalizeDomain(d)
		if err != nil {
			return nil, fmt.Errorf("%w: BlockDomains entry %q: %w", ErrConfig, d, err)
		}
		blocked = append(blocked, n)
	}
	zones := c.CanaryZones
	if len(zones) == 0 {
		zones = defaultCanaryZones
	}
	canaryZones := make([]string, 0, len(zones))
	for _, z := range zones {
		n, err := normalizeZone(z)
		if err != nil {
			return nil, fmt.Errorf("%w: CanaryZones entry %q: %w", ErrConfig, z, err)
		}
		canaryZones = append(canaryZones, n)
	}
	v := &Validator{
		cfg: c,
		syntax: SyntaxOptions{
			AllowQuotedLocal:    c.AllowQuotedLocal,
			AllowAddressLiteral: c.AllowAddressLiteral,
			ASCIILocalOnly:      c.ASCIILocalOnly,
		},
		resolver:   newResolver(c.Nameservers, c.QueryTimeout, c.Retries, c.MaxInFlight),
		counters:   &counters{},
		classifier: cl,
		suggester:  newSuggester(cl),
		blocked:    blocked,
		// MX and address queries run side by side, each with its retries;
		// the MX hosts' addresses take one more round, and CNAMEs the
		// server did not follow add rounds. Four rounds bound a lookup; a
		// longer chain ends as UNKNOWN.
		budget: c.QueryTimeout * time.Duration(c.Retries+1) * 4,
	}
	v.resolver.counters = v.counters
	v.resolver.canary.zones = canaryZones
	v.resolver.trust.zone = trustZone(canaryZones)
	v.resolver.trust.every = c.TrustCheckInterval
	v.resolver.trust.logger = c.Logger
	if c.CacheSize > 0 {
		v.resolver.zones = newZoneMemory(c.FailureTTL)
	}
	if c.CacheSize > 0 {
		v.cache, err = lru.NewWithEvict(c.CacheSize, func(string, *domainInfo) { v.counters.evictions.Add(1) })
		if err != nil {
			return nil, fmt.Errorf("emailcheck: cache: %w", err)
		}
		v.hosts, err = lru.New[string, *hostInfo](c.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("emailcheck: cache: %w", err)
		}
		v.burners, err = lru.New[netip.Addr, burnerMark](c.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("emailcheck: cache: %w", err)
		}
		v.parked, err = lru.New[netip.Addr, time.Time](c.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("emailcheck: cache: %w", err)
		}
	}
	v.base, v.cancel = context.WithCancel(context.Background())
	return v, nil
}

// setDefaults fills zero fields with their defaults and checks the rest.
func (c *Config) setDefaults() error {
	c.QueryTimeout = cmp.Or(c.QueryTimeout, DefaultQueryTimeout)
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	c.MaxInFlight = cmp.Or(c.MaxInFlight, DefaultMaxInFlight)
	c.CacheSize = cmp.Or(c.CacheSize, DefaultCacheSize)
	c.MinTTL = cmp.Or(c.MinTTL, DefaultMinTTL)
	c.MaxTTL = cmp.Or(c.MaxTTL, DefaultMaxTTL)
	c.TrustCheckInterval = cmp.Or(c.TrustCheckInterval, DefaultTrustCheckInterval)
	switch {
	case c.FailureTTL == 0:
		c.FailureTTL = DefaultFailureTTL
	case c.FailureTTL < 0:
		c.FailureTTL = 0
	}
	c.Source = cmp.Or(c.Source, SourceAPI)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case c.QueryTimeout < 0:
		return errors.New("emailcheck: QueryTimeout must not be negative")
	case c.TrustCheckInterval < 0:
		return errors.New("emailcheck: TrustCheckInterval must not be negative")
	case c.MaxInFlight < 0:
		return errors.New("emailcheck: MaxInFlight must not be negative")
	case c.MinTTL < 0 || c.MaxTTL < c.MinTTL:
		return fmt.Errorf("emailcheck: TTL bounds [%v, %v] are invalid", c.MinTTL, c.MaxTTL)
	}
	if len(c.Nameservers) == 0 {
		servers, err := systemNameservers(resolvConfPath)
		if err != nil {
			return fmt.Errorf("emailcheck: no Nameservers configured and none usable in %s: %w", resolvConfPath, err)
		}
		c.Nameservers = servers
		return nil
	}
	servers := make([]string, len(c.Nameservers))
	for i, s := range c.Nameservers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			// A bare host or IP means the standard port.
			host, port = strings.Trim(s, "[]"), "53"
		}
		if host == "" || port == "" {
			return fmt.Errorf("emailcheck: nameserver %q is not host:port", s)
		}
		servers[i] = net.JoinHostPort(host, port)
	}
	c.Nameservers = servers
	return nil
}

// normalizeDomain turns a configured domain into lower-case A-label form,
// holding it to the same rules as the domain of an address.
func normalizeDomain(d string) (string, error) {
	d = strings.TrimSuffix(strings.TrimSpace(d), ".")
	addr, err := ParseAddress("postmaster@"+d, SyntaxOptions{})
	if err != nil {
		return "", err
	}
	return addr.ASCIIDomain, nil
}

// normalizeZone returns zone (a domain name, a top-level domain
// included) fully qualified in lower-case ASCII.
func normalizeZone(zone string) (string, error) {
	z := strings.TrimSuffix(strings.TrimSpace(zone), ".")
	if !strings.Contains(z, ".") {
		// A top-level domain: checked as a label of a domain.
		n, err := normalizeDomain("canary." + z)
		if err != nil {
			return "", err
		}
		return strings.TrimPrefix(n, "canary.") + ".", nil
	}
	n, err := normalizeDomain(z)
	if err != nil {
		return "", err
	}
	return n + ".", nil
}

// CallOption adjusts one call of Validate.
type CallOption func(*callOptions)

type callOptions struct {
	source          string
	unreachableErrs bool
	account         string
	noProbe         bool
}

// ErrResolverUnreachable is the error Validate returns, under
// [WithUnreachableError], when no nameserver answered at all: the DNS as
// a whole, or the domain's own servers, did not answer, and the UNKNOWN
// result that comes with it is no verdict on the address.
var ErrResolverUnreachable = errors.New("emailcheck: no nameserver answered")

// WithUnreachableError makes Validate also return an error matching
// [ErrResolverUnreachable] when no nameserver answered (every attempt
// failed in transport or timed out), as opposed to a server answering
// that it could not resolve the name. The error comes with the UNKNOWN
// result Validate gives without the option, so that a batch worker can
// retry later, or keep that very result once it stops retrying.
func WithUnreachableError() CallOption {
	return func(o *callOptions) { o.unreachableErrs = true }
}

// WithSource sets meta.source for one call, for example [SourceAPIAsync].
func WithSource(source string) CallOption {
	return func(o *callOptions) { o.source = source }
}

// WithAccount names the account a call is made for: [Config.ProbeBudget]
// counts the call's mailbox probe against it.
func WithAccount(id string) CallOption {
	return func(o *callOptions) { o.account = id }
}

// WithoutProbe turns the mailbox probe off for one call, as for an
// anonymous caller: the result keeps its DNS verdict and, when the
// validator has a [Config.Prober], an smtp object saying the address was
// not probed.
func WithoutProbe() CallOption {
	return func(o *callOptions) { o.noProbe = true }
}

// Validate checks one address. An unacceptable address is reported in the
// Result, never as an error: the error is non-nil only when ctx ends before
// the answer (ctx's error), after Close ([ErrClosed]), or, with a Result,
// under [WithUnreachableError]. A DNS lookup never outlasts the
// configured timeouts and retries, whatever ctx allows.
func (v *Validator) Validate(ctx context.Context, email string, opts ...CallOption) (Result, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	source := v.cfg.Source
	var o callOptions
	if len(opts) > 0 {
		for _, opt := range opts {
			opt(&o)
		}
		source = cmp.Or(o.source, source)
	}
	res := Result{
		Email: email,
		Confidence: Confidence{
			AliasStatus:       AliasMaybeNot,
			EquivalentDomains: []string{},
		},
		Provider: Provider{Name: "Unknown"},
		Meta:     Meta{Source: source},
	}
	unreachable, err := v.check(ctx, start, email, &res, &o)
	if err != nil {
		return Result{}, err
	}
	if v.cfg.Prober != nil && res.SMTP == nil {
		res.SMTP = &SMTPResult{Mailbox: MailboxUnknown, Detail: "not probed: the address is " + string(res.Confidence.Status)}
	}
	res.Meta.LatencyMS = time.Since(start).Milliseconds()
	return res, unreachable
}

// check fills res with the verdict on email. Under o.unreachableErrs, a
// verdict no nameserver answered for is also reported as the first error,
// matching [ErrResolverUnreachable]; the second is a failure to judge.
func (v *Validator) check(ctx context.Context, now time.Time, email string, res *Result, o *callOptions) (unreachable, err error) {
	addr, info, final := v.judgeWithoutDNS(email, res)
	if final {
		return nil, nil
	}
	domain := addr.ASCIIDomain
	if info == nil {
		info, err = v.domainInfo(ctx, now, domain)
		if err != nil {
			return nil, err
		}
		if o.unreachableErrs && info.unreachable {
			unreachable = fmt.Errorf("%w: %s", ErrResolverUnreachable, domain)
		}
		res.Confidence.Status = statusOf(info)
		res.Reason = reasonOf(info)
		res.Validations.DomainExists = info.exists()
		res.Validations.MXRecords = info.outcome == outcomeMX
		res.MXHosts = slices.Clone(info.mxHosts)
		res.Provider.Name = info.class.provider
	}
	ev := v.describe(addr, info, res)
	if v.cfg.Prober != nil {
		v.probe(ctx, addr, info, res, ev, o)
	}
	return unreachable, nil
}

// judgeWithoutDNS gives email the verdict that needs no DNS, as Validate
// and Unknown both do first. final reports a result complete without
// a domain (bad syntax, an address literal); otherwise addr is the parsed
// address, and info is non-nil when its domain is reserved or blocked
// (status and reason set), nil when the domain's verdict is the DNS's.
func (v *Validator) judgeWithoutDNS(email string, res *Result) (addr Address, info *domainInfo, final bool) {
	addr, err := ParseAddress(email, v.syntax)
	if err != nil {
		res.Confidence.Status = StatusInvalidFormat
		res.Reason = ReasonInvalidSyntax
		res.Confidence.Score = score(StatusInvalidFormat, evidence{})
		return addr, nil, true
	}
	res.Validations.Syntax = true
	if addr.IsLiteral {
		v.checkLiteral(addr, res)
		return addr, nil, true
	}
	domain := addr.ASCIIDomain
	if special := isSpecialUse(domain); special || v.isBlocked(domain) {
		res.Confidence.Status = StatusInvalid
		res.Reason = ReasonBlockedDomain
		if special {
			res.Reason = ReasonReservedDomain
		}
		return addr, &domainInfo{outcome: outcomeUnknown, class: v.classifier.classifyDomain(domain, nil)}, false
	}
	return addr, nil, false
}

// describe fills in what the address and its domain's class tell beside
// the status (provider, suggestion, disposable flag, role, alias,
// equivalent domains) and the score, and returns the evidence the score
// was computed from. Validate and Unknown share it, so that both describe
// an address alike.
func (v *Validator) describe(addr Address, info *domainInfo, res *Result) evidence {
	res.Provider.IsFree = info.class.free
	if info.suggest != "" {
		s := addr.Local + "@" + info.suggest
		res.DidYouMean = &s
	}
	res.Validations.IsDisposable = info.class.disposable

	role, alias, canonical := v.classifier.classifyLocal(addr.Local, addr.ASCIIDomain, info.class)
	res.Confidence.IsRoleBased = role
	res.Confidence.AliasStatus = alias
	if canonical != "" {
		c := canonical // only an address that has one pays for the allocation
		res.Confidence.CanonicalEmail = &c
	}
	if len(info.class.equivalent) > 0 {
		res.Confidence.EquivalentDomains = slices.Clone(info.class.equivalent)
	}
	ev := evidence{
		role:       role,
		aliasGuess: alias == AliasPossible,
		implicitMX: info.outcome == outcomeImplicitMX,
		nullMX:     info.outcome == outcomeNullMX,
	}
	res.Confidence.Score = score(res.Confidence.Status, ev)
	return ev
}

// statusOf maps a domain's DNS verdict and class to a status, in the
// documented order of precedence.
func statusOf(info *domainInfo) Status {
	switch info.outcome {
	case outcomeNXDomain:
		return StatusInvalidDomain
	case outcomeUnknown, outcomeHostsUnknown:
		return StatusUnknown
	case outcomeNoMX, outcomeNullMX:
		return StatusNoMXRecords
	}
	if info.class.disposable {
		return StatusDisposable
	}
	return StatusLikely
}

// checkLiteral judges an address literal (user@[192.0.2.1]): mail to it goes
// straight to that host, as for a domain with only an A record, so it is
// LIKELY under ImplicitMX and NO_MX_RECORDS otherwise, scored like such a
// domain; a literal that is not a public unicast address is INVALID.
func (v *Validator) checkLiteral(addr Address, res *Result) {
	role, _, _ := v.classifier.classifyLocal(addr.Local, addr.ASCIIDomain, domainClass{provider: "Unknown"})
	res.Confidence.IsRoleBased = role
	lit := strings.TrimSuffix(strings.TrimPrefix(addr.ASCIIDomain, "["), "]")
	if len(lit) > 5 && strings.EqualFold(lit[:5], "ipv6:") {
		lit = lit[5:]
	}
	ip, err := netip.ParseAddr(lit)
	if err != nil || !netpolicy.IsPublic(ip) {
		res.Confidence.Status = StatusInvalid
		res.Reason = ReasonReservedDomain
		res.Confidence.Score = score(StatusInvalid, evidence{})
		return
	}
	res.Validations.DomainExists = true
	res.Confidence.Status, res.Reason = StatusNoMXRecords, ReasonNoMX
	if v.cfg.ImplicitMX {
		res.Confidence.Status, res.Reason = StatusLikely, ReasonValid
	}
	res.Confidence.Score = score(res.Confidence.Status, evidence{role: role, implicitMX: v.cfg.ImplicitMX})
}

func (v *Validator) isBlocked(domain string) bool {
	for _, b := range v.blocked {
		if isDomainOrSub(domain, b) {
			return true
		}
	}
	return false
}

// domainInfo returns the verdict on a domain from the cache, or from one
// DNS lookup shared by every caller asking for the same domain meanwhile.
func (v *Validator) domainInfo(ctx context.Context, now time.Time, domain string) (*domainInfo, error) {
	if info, ok := v.cached(domain, now); ok {
		v.counters.hits.Add(1)
		return info, nil
	}
	v.counters.misses.Add(1)
	ch := v.flights.DoChan(domain, func() (any, error) {
		if info, ok := v.cached(domain, time.Now()); ok {
			return info, nil
		}
		v.mu.Lock()
		if v.closed {
			v.mu.Unlock()
			return nil, ErrClosed
		}
		v.lookup.Add(1)
		v.mu.Unlock()
		defer v.lookup.Done()
		v.counters.inFlight.Add(1)
		defer v.counters.inFlight.Add(-1)

		lctx, cancel := context.WithTimeout(v.base, v.budget)
		defer cancel()
		info, ttl := v.resolveDomain(lctx, domain)
		v.refine(domain, info, true)
		if v.cache != nil && ttl > 0 && v.base.Err() == nil {
			info.expires = time.Now().Add(ttl)
			v.cache.Add(domain, info)
		}
		return info, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*domainInfo), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// promoteEvery is how often, at most, a cache hit on one domain refreshes
// its place in the LRU order. Hits otherwise take only a shared read lock,
// so concurrent callers on a popular domain do not queue on the cache.
const promoteEvery = time.Second

func (v *Validator) cached(domain string, now time.Time) (*domainInfo, bool) {
	if v.cache == nil {
		return nil, false
	}
	info, ok := v.cache.Peek(domain)
	if !ok || now.After(info.expires) {
		return nil, false
	}
	if gen := v.classifier.feed.generation(); info.feedGen != gen {
		// The operator's list changed since: judged again, no query.
		info = v.reclassify(domain, info, gen)
	}
	last := info.promoted.Load()
	if ns := now.UnixNano(); ns-last > int64(promoteEvery) && info.promoted.CompareAndSwap(last, ns) {
		v.cache.Get(domain) // move to the front of the LRU order
	}
	return info, true
}

// ManyOptions configures ValidateMany. The zero value gives defaults.
type ManyOptions struct {
	// Concurrency bounds the validations in flight, and so how far reading
	// from the input runs ahead of the results consumed. Default 1024.
	Concurrency int
	// Source sets meta.source for every result; default Config.Source.
	Source string
}

// ValidateMany validates every address of emails with bounded concurrency
// and yields the results in input order. The input is read no faster than
// results are consumed (back-pressure): at most Concurrency+1 addresses are
// in flight or waiting to be yielded. When ctx ends it yields ctx's error
// once and stops. Breaking out of the loop cancels the work in flight;
// ValidateMany returns only after every goroutine it started has ended.
// The emails sequence is read on a goroutine of its own, so a sequence that
// blocks (a reader waiting for input) delays that return until it yields or
// ends.
func (v *Validator) ValidateMany(ctx context.Context, emails iter.Seq[string], opts *ManyOptions) iter.Seq2[Result, error] {
	var o ManyOptions
	if opts != nil {
		o = *opts
	}
	conc := cmp.Or(o.Concurrency, DefaultConcurrency)
	if conc < 1 {
		conc = 1
	}
	source := cmp.Or(o.Source, v.cfg.Source)
	return func(yield func(Result, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		var workers sync.WaitGroup
		defer workers.Wait()
		defer cancel()

		type slot struct {
			res  Result
			err  error
			done chan struct{}
		}
		pending := make(chan *slot, conc)
		workers.Add(1)
		go func() {
			defer workers.Done()
			defer close(pending)
			for email := range emails {
				s := &slot{done: make(chan struct{})}
				select {
				case pending <- s:
				case <-ctx.Done():
					return
				}
				workers.Add(1)
				go func() {
					defer workers.Done()
					defer close(s.done)
					s.res, s.err = v.Validate(ctx, email, WithSource(source))
				}()
			}
		}()
		for s := range pending {
			<-s.done
			if s.err != nil {
				if err := ctx.Err(); err != nil && !errors.Is(s.err, err) {
					s.err = err
				}
				yield(Result{}, s.err)
				return
			}
			if !yield(s.res, nil) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(Result{}, err)
		}
	}
}

// Close cancels the DNS lookups in flight, waits for them to end, and makes
// later calls of Validate that need DNS fail with [ErrClosed]. Answers
// already cached are still served. It is safe to call more than once.
func (v *Validator) Close() error {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	v.cancel()
	v.lookup.Wait()
	v.resolver.close()
	return nil
}
