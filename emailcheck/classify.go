package emailcheck

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// The embedded lists; see data/README.md for their sources and licenses.
var (
	//go:embed data/disposable_domains.txt
	embeddedDisposable string
	//go:embed data/disposable_mailchecker.txt
	embeddedDisposableMailchecker string
	//go:embed data/disposable_allowlist.txt
	embeddedAllowlist string
	//go:embed data/role_localparts.txt
	embeddedRoles string
	//go:embed data/free_domains.txt
	embeddedFree string
	//go:embed data/free_exclusions.txt
	embeddedFreeExclusions string
)

// aliasRule is how a provider treats sub-address tags.
type aliasRule uint8

const (
	aliasRuleUnknown  aliasRule = iota // provider's rule not known
	aliasRulePlus                      // "+tag" is ignored
	aliasRulePlusDots                  // "+tag" and dots are ignored (consumer Gmail)
	aliasRuleDash                      // "-tag" is ignored (Yahoo)
)

// domainClass is what the lists and provider rules say about a domain. It
// depends only on the domain and its MX hosts, so it is cached with them.
type domainClass struct {
	disposable bool
	reason     disposableReason // why disposable; notDisposable otherwise
	free       bool             // a free consumer mailbox provider
	provider   string
	rule       aliasRule
	equivalent []string // never nil; shared, callers copy before handing out
}

// disposableReason is why a domain is disposable. It is kept with the
// verdict and reported as the result's [Reason].
type disposableReason uint8

const (
	notDisposable    disposableReason = iota
	disposableList                    // the domain, or a parent, is on a list
	disposableMXHost                  // an MX host's registrable domain is on a list
	disposableMX                      // an MX host shares an address with listed burners' MX hosts
)

// String returns the reason's name, as a result's reason field carries
// it.
func (r disposableReason) String() string {
	switch r {
	case disposableList:
		return "disposable_list"
	case disposableMXHost:
		return "disposable_mx_host"
	case disposableMX:
		return "disposable_mx"
	}
	return ""
}

// provider is one entry of the provider index.
type provider struct {
	name string
	rule aliasRule
}

// classifier holds the embedded and configured lists. It is immutable after
// construction and safe for concurrent use.
type classifier struct {
	disposable map[string]struct{}
	allow      map[string]struct{}
	free       map[string]struct{} // free consumer mailbox providers
	roles      map[string]struct{}
	byMX       map[string]*provider // MX host suffix → provider
	byDomain   map[string]*provider // consumer mailbox domain → provider
	yahoo      *provider
	equivalent map[string][]string // domain → the other members of its group
	none       []string            // the empty equivalent list
	known      []knownDomain       // the known-domain model, in file order
	knownSet   map[string]struct{} // its domains
	shared     map[string]struct{} // registrable domains of MX hosts many unrelated domains share
	feed       *DisposableFeed     // the operator's list, merged with the embedded ones; nil when none
	parking    map[string]parkKind // parking services' and registrars' default MX hosts (data/parking_mx.txt)
}

// newClassifier builds the classifier from the embedded lists plus the extra
// disposable domains and the allowlist from Config.
// lists are the configured additions to and removals from the embedded
// lists.
type lists struct {
	disposable, allow []string
	free, notFree     []string
	feed              *DisposableFeed
}

func newClassifier(cfg lists) (*classifier, error) {
	extraDisposable, allow := cfg.disposable, cfg.allow
	c := &classifier{
		disposable: make(map[string]struct{}, strings.Count(embeddedDisposable, "\n")+strings.Count(embeddedDisposableMailchecker, "\n")+len(extraDisposable)),
		allow:      make(map[string]struct{}, strings.Count(embeddedAllowlist, "\n")+len(allow)),
		roles:      make(map[string]struct{}, strings.Count(embeddedRoles, "\n")),
		byMX:       make(map[string]*provider),
		byDomain:   make(map[string]*provider),
		equivalent: make(map[string][]string),
		none:       []string{},
		shared:     make(map[string]struct{}),
		feed:       cfg.feed,
	}
	known, err := parseKnown(embeddedKnown)
	if err != nil {
		return nil, err
	}
	c.known = known
	c.knownSet = make(map[string]struct{}, len(known))
	for _, k := range known {
		c.knownSet[k.name] = struct{}{}
	}
	for _, d := range sharedMailHosts() {
		c.shared[d] = struct{}{}
	}
	if c.parking, err = parseParkingMX(embeddedParkingMX); err != nil {
		return nil, err
	}
	addLines(c.disposable, embeddedDisposable)
	addLines(c.disposable, embeddedDisposableMailchecker)
	addLines(c.allow, embeddedAllowlist)
	addLines(c.roles, embeddedRoles)
	configured := make(map[string]struct{}, len(extraDisposable))
	if err := addConfigured(configured, extraDisposable, "disposable domain"); err != nil {
		return nil, err
	}
	for d := range configured {
		c.disposable[d] = struct{}{}
	}
	// A domain whose owner we know is never disposable, unless the host
	// says so in Config.DisposableDomains.
	for _, k := range known {
		if _, ok := configured[k.name]; !ok {
			c.allow[k.name] = struct{}{}
		}
	}
	if err := addConfigured(c.allow, allow, "allowed domain"); err != nil {
		return nil, err
	}
	if err := c.buildFree(cfg.free, cfg.notFree); err != nil {
		return nil, err
	}

	for _, s := range providerSpecs() {
		p := &provider{name: s.name, rule: s.rule}
		for _, h := range s.mx {
			c.byMX[h] = p
		}
		for _, d := range s.domains {
			c.byDomain[d] = p
		}
		if s.name == "Yahoo" {
			c.yahoo = p
		}
	}
	for _, g := range equivalentGroups() {
		for _, d := range g {
			others := make([]string, 0, len(g)-1)
			for _, o := range g {
				if o != d {
					others = append(others, o)
				}
			}
			slices.Sort(others)
			c.equivalent[d] = others
		}
	}
	return c, nil
}

// buildFree makes the free-provider set: the embedded list without its
// disposable, reserved and excluded domains, corrected by the known-domain
// model's facts (free only where anyone can open a mailbox at no cost),
// then the configuration's additions and removals.
func (c *classifier) buildFree(add, remove []string) error {
	excluded := make(map[string]struct{})
	for line := range strings.Lines(embeddedFreeExclusions) {
		if f := strings.Fields(line); len(f) > 0 && f[0][0] != '#' {
			excluded[f[0]] = struct{}{}
		}
	}
	c.free = make(map[string]struct{}, strings.Count(embeddedFree, "\n")+len(add))
	for line := range strings.Lines(embeddedFree) {
		d := strings.TrimSpace(line)
		if d == "" || d[0] == '#' || isSpecialUse(d) {
			continue
		}
		if _, ok := excluded[d]; ok {
			continue
		}
		if _, ok := c.disposable[d]; ok {
			if _, ok := c.allow[d]; !ok {
				continue
			}
		}
		c.free[d] = struct{}{}
	}
	for _, k := range c.known {
		switch k.free {
		case freeYes:
			c.free[k.name] = struct{}{}
		case freePaid, freeSub, freeOrg:
			delete(c.free, k.name)
		}
	}
	if err := addConfigured(c.free, add, "free domain"); err != nil {
		return err
	}
	gone := make(map[string]struct{}, len(remove))
	if err := addConfigured(gone, remove, "not-free domain"); err != nil {
		return err
	}
	for d := range gone {
		delete(c.free, d)
	}
	return nil
}

// isFree reports whether the registrable domain of a lower-case A-label
// domain is a free consumer mailbox provider.
func (c *classifier) isFree(domain string) bool {
	if _, ok := c.free[domain]; ok {
		return true
	}
	reg, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil || reg == domain {
		return false
	}
	_, ok := c.free[reg]
	return ok
}

// addLines adds each non-blank line of data that is not a "#" comment to
// set. The keys share data's memory.
func addLines(set map[string]struct{}, data string) {
	for line := range strings.Lines(data) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		set[line] = struct{}{}
	}
}

// addConfigured normalizes each configured domain and adds it to set.
func addConfigured(set map[string]struct{}, domains []string, what string) error {
	for _, raw := range domains {
		d, err := normalizeListDomain(raw)
		if err != nil {
			return fmt.Errorf("emailcheck: %s %q: %w", what, raw, err)
		}
		set[d] = struct{}{}
	}
	return nil
}

// errPublicSuffix is normalizeListDomain's error for a public suffix.
var errPublicSuffix = errors.New("a public suffix, which would never match")

// normalizeListDomain turns a configured domain into the lower-case A-label
// form the lists use.
func normalizeListDomain(raw string) (string, error) {
	d := strings.TrimSuffix(strings.TrimSpace(raw), ".")
	if d == "" {
		return "", errors.New("empty domain")
	}
	a, err := idna.Lookup.ToASCII(d)
	if err != nil {
		return "", err
	}
	if len(a) > 253 {
		return "", errors.New("domain longer than 253 octets")
	}
	for label := range strings.SplitSeq(a, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("empty label or label longer than 63 octets")
		}
	}
	if _, err := publicsuffix.EffectiveTLDPlusOne(a); err != nil {
		return "", errPublicSuffix
	}
	return a, nil
}

// classifyDomain classifies a lower-case A-label domain given its usable MX
// hosts (lower-case, no trailing dot, most preferred first; nil when unknown).
func (c *classifier) classifyDomain(asciiDomain string, mxHosts []string) domainClass {
	p := c.providerOf(asciiDomain, mxHosts)
	if asciiDomain == "gmail.com" || asciiDomain == "googlemail.com" {
		p.rule = aliasRulePlusDots
	}
	eq := c.equivalent[asciiDomain]
	if eq == nil {
		eq = c.none
	}
	reason := c.disposableReason(asciiDomain, mxHosts)
	return domainClass{
		disposable: reason != notDisposable,
		reason:     reason,
		// A listed domain is no free provider's, as the embedded lists'
		// are dropped from the free list.
		free:       reason != disposableList && c.isFree(asciiDomain),
		provider:   p.name,
		rule:       p.rule,
		equivalent: eq,
	}
}

// isDisposable applies the disposable lists to a domain and its MX hosts.
func (c *classifier) isDisposable(domain string, mxHosts []string) bool {
	return c.disposableReason(domain, mxHosts) != notDisposable
}

// disposableReason applies the disposable lists to a domain and its MX
// hosts: the allowlist (with the known domains) wins, then the domain's
// own listing, then its MX hosts'. The operator's feed counts as a list,
// less what the embedded lists were built without: free providers, and
// the mail services of the provider table and the parking list as MX
// hosts (a line naming one would condemn every domain it serves).
func (c *classifier) disposableReason(domain string, mxHosts []string) disposableReason {
	if reg, err := publicsuffix.EffectiveTLDPlusOne(domain); err == nil {
		if matchUp(c.allow, domain, reg) {
			return notDisposable
		}
		if matchUp(c.disposable, domain, reg) || c.feed.lists(domain, reg) && !c.isFree(domain) {
			return disposableList
		}
	}
	for _, h := range mxHosts {
		reg, err := publicsuffix.EffectiveTLDPlusOne(h)
		if err != nil {
			continue
		}
		_, listed := c.disposable[reg]
		if (listed || c.feedListsHost(h, reg)) && !matchUp(c.allow, h, reg) {
			return disposableMXHost
		}
	}
	return notDisposable
}

// feedListsHost reports whether the operator's feed lists the registrable
// domain reg of MX host h, which is no free provider's and no mail
// service's many domains share (see disposableReason).
func (c *classifier) feedListsHost(h, reg string) bool {
	return c.feed.listsReg(reg) && !c.isFree(reg) && !c.hostedMX(h) && !c.parkedMX(h)
}

// isAllowed reports whether a domain is on the allowlist (the embedded one,
// the configured one or the known-domain model), itself or by a parent.
func (c *classifier) isAllowed(domain string) bool {
	reg, err := publicsuffix.EffectiveTLDPlusOne(domain)
	return err == nil && matchUp(c.allow, domain, reg)
}

// hostedMX reports whether an MX host belongs to a mail service many
// unrelated domains use: a provider or gateway of the provider table, or
// a shared host. Such a host says nothing about who owns a domain.
func (c *classifier) hostedMX(host string) bool {
	return c.mxProvider(host) != nil || underAny(c.shared, host)
}

// underAny reports whether host, or a domain it is below, is in set. It
// does not allocate.
func underAny(set map[string]struct{}, host string) bool {
	for s := host; ; {
		if _, ok := set[s]; ok {
			return true
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return false
		}
		s = s[i+1:]
	}
}

// mxProvider returns the provider whose MX host suffix host matches, or nil.
func (c *classifier) mxProvider(host string) *provider {
	for s := host; ; {
		if p, ok := c.byMX[s]; ok {
			return p
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return nil
		}
		s = s[i+1:]
	}
}

// matchUp reports whether domain, or one of its parents down to reg (its
// registrable domain, a suffix of it), is in set.
func matchUp(set map[string]struct{}, domain, reg string) bool {
	for {
		if _, ok := set[domain]; ok {
			return true
		}
		if len(domain) <= len(reg) {
			return false
		}
		i := strings.IndexByte(domain, '.')
		if i < 0 {
			return false
		}
		domain = domain[i+1:]
	}
}

// providerOf names the provider of a domain from its MX hosts, then from
// the domain itself, then from the most preferred MX host's registrable
// domain.
func (c *classifier) providerOf(domain string, mxHosts []string) provider {
	for _, h := range mxHosts {
		if p := c.mxProvider(h); p != nil {
			return *p
		}
	}
	if p, ok := c.byDomain[domain]; ok {
		return *p
	}
	if reg, err := publicsuffix.EffectiveTLDPlusOne(domain); err == nil &&
		strings.HasPrefix(reg, "yahoo.") && reg != "yahoo.co.jp" {
		// Yahoo's regional domains (yahoo.co.uk, yahoo.com.br, ...);
		// Yahoo Japan is a separate company.
		return *c.yahoo
	}
	return hostsProvider(mxHosts)
}

// providerByMX names the provider of a domain from its MX hosts alone,
// the domain's name aside: the provider an MX host's suffix names, else
// the most preferred host's registrable domain, else "Unknown". It is for
// a domain whose name says nothing of who runs its mail, such as a typo
// of a provider's (yahoo.cm).
func (c *classifier) providerByMX(mxHosts []string) provider {
	for _, h := range mxHosts {
		if p := c.mxProvider(h); p != nil {
			return *p
		}
	}
	return hostsProvider(mxHosts)
}

// hostsProvider names a provider no index knows by the most preferred MX
// host's registrable domain, or "Unknown" when there is no MX host.
func hostsProvider(mxHosts []string) provider {
	if len(mxHosts) > 0 {
		h := mxHosts[0]
		if reg, err := publicsuffix.EffectiveTLDPlusOne(h); err == nil {
			return provider{name: reg}
		}
		return provider{name: h}
	}
	return provider{name: "Unknown"}
}

// classifyLocal classifies a local part under the domain's class: whether it
// is a role mailbox, its alias status, and the canonical address ("" when no
// alias is detected).
func (c *classifier) classifyLocal(local, asciiDomain string, dc domainClass) (role bool, alias AliasStatus, canonical string) {
	if local != "" && local[0] == '"' {
		// A quoted local part (Config.AllowQuotedLocal) is taken literally:
		// no provider applies tag or role rules inside quotes.
		return false, AliasMaybeNot, ""
	}
	role = c.isRole(local, dc.rule)

	sep := byte('+')
	if dc.rule == aliasRuleDash {
		sep = '-'
	}
	i := strings.IndexByte(local, sep)
	if i <= 0 {
		// No separator, or one at the start: part of the name.
		return role, AliasMaybeNot, ""
	}
	base := local[:i]
	switch dc.rule {
	case aliasRuleUnknown:
		return role, AliasPossible, base + "@" + asciiDomain
	case aliasRulePlusDots:
		if strings.Trim(base, ".") == "" {
			// Nothing would be left of the name once its dots go.
			return role, AliasMaybeNot, ""
		}
		return role, AliasConfirmed, gmailCanonical(base)
	default:
		return role, AliasConfirmed, lowerJoin(base, asciiDomain)
	}
}

// isRole reports whether local, lower-cased and with its tag removed, is a
// role mailbox. It does not allocate for local parts of up to 64 octets.
func (c *classifier) isRole(local string, rule aliasRule) bool {
	var buf [64]byte
	b := buf[:0]
	for i := 0; i < len(local); i++ {
		ch := local[i]
		if ch >= 0x80 {
			return false // the list is ASCII
		}
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		b = append(b, ch)
	}
	if i := bytes.IndexByte(b, '+'); i > 0 {
		b = b[:i]
	}
	if _, ok := c.roles[string(b)]; ok {
		return true
	}
	if rule == aliasRuleDash {
		if i := bytes.IndexByte(b, '-'); i > 0 {
			_, ok := c.roles[string(b[:i])]
			return ok
		}
	}
	return false
}

// lowerJoin returns lower(local) + "@" + domain with one allocation when
// local is ASCII.
func lowerJoin(local, domain string) string {
	var sb strings.Builder
	sb.Grow(len(local) + 1 + len(domain))
	for i := 0; i < len(local); i++ {
		ch := local[i]
		if ch >= 0x80 {
			return lowerUTF8(local) + "@" + domain
		}
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		sb.WriteByte(ch)
	}
	sb.WriteByte('@')
	sb.WriteString(domain)
	return sb.String()
}

// gmailCanonical returns the consumer Gmail address for a local part
// without its tag: dots removed, lower-cased, at gmail.com.
func gmailCanonical(base string) string {
	const domain = "@gmail.com"
	var sb strings.Builder
	sb.Grow(len(base) + len(domain))
	for i := 0; i < len(base); i++ {
		ch := base[i]
		if ch >= 0x80 {
			return lowerUTF8(strings.ReplaceAll(base, ".", "")) + domain
		}
		if ch == '.' {
			continue
		}
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		sb.WriteByte(ch)
	}
	sb.WriteString(domain)
	return sb.String()
}

// lowerUTF8 lower-cases a non-ASCII local part. Invalid UTF-8, which the
// parser does not accept, is returned unchanged rather than mangled.
func lowerUTF8(s string) string {
	if !utf8.ValidString(s) {
		return s
	}
	return strings.ToLower(s)
}
