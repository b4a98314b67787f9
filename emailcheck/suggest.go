package emailcheck

import (
	"math/bits"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// target is a domain a typo suggestion may lead to: a consumer provider or
// an ISP of the known-domain model.
type target struct {
	name   string
	weight int
	global bool   // a top provider: two edits even when the typo receives mail
	mask   uint64 // the bytes it contains, see byteMask
}

// suggester proposes the domain a person most likely meant to type. It is
// immutable after construction and safe for concurrent use.
type suggester struct {
	c       *classifier
	targets []target            // by length, then weight (largest first), then name
	starts  []int               // starts[n]: index of the first target at least n bytes long
	known   map[string]struct{} // real domains: never suggested away from
	typos   map[string]string   // known typo domain → the intended one
	// suffixes indexes the known domains by name, for slips in the suffix.
	suffixes suffixIndex
}

// brokenTLD maps misspellings of the common top-level domains, none of
// which is a delegated TLD, to the intended one.
var brokenTLD = map[string]string{
	"con": "com", "cmo": "com", "coom": "com", "ocm": "com", "comm": "com", "cpm": "com",
	"vom": "com", "xom": "com", "copm": "com", "colm": "com", "cim": "com",
	"nte": "net", "ner": "net", "nett": "net",
	"ogr": "org", "orgg": "org", "rog": "org",
}

// newSuggester builds the suggester from the classifier's known-domain
// model (the targets, and the domains never corrected), its free-provider
// set and provider index (real domains too), and the typo exclusions of
// the free list.
func newSuggester(c *classifier) *suggester {
	s := &suggester{c: c, known: make(map[string]struct{}), typos: make(map[string]string)}
	for line := range strings.Lines(embeddedFreeExclusions) {
		d, reason, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && strings.HasPrefix(reason, "typo of ") {
			s.typos[d] = strings.TrimPrefix(reason, "typo of ")
		}
	}
	for _, k := range c.known {
		s.known[k.name] = struct{}{}
		if k.target() {
			s.targets = append(s.targets, target{name: k.name, weight: k.weight, global: k.kind == kindGlobal, mask: byteMask(k.name)})
		}
	}
	for d := range c.free {
		s.known[d] = struct{}{}
	}
	for d := range c.byDomain {
		s.known[d] = struct{}{}
	}
	for d := range s.typos {
		delete(s.known, d)
	}
	s.suffixes = make(suffixIndex)
	for d := range s.known {
		s.suffixes.add(d, 0)
	}
	for _, t := range s.targets {
		s.suffixes.add(t.name, t.weight)
	}
	slices.SortFunc(s.targets, func(a, b target) int {
		if len(a.name) != len(b.name) {
			return len(a.name) - len(b.name)
		}
		if a.weight != b.weight {
			return b.weight - a.weight
		}
		return strings.Compare(a.name, b.name)
	})
	longest := 0
	if len(s.targets) > 0 {
		longest = len(s.targets[len(s.targets)-1].name)
	}
	s.starts = make([]int, longest+2)
	for n := range s.starts {
		s.starts[n], _ = slices.BinarySearchFunc(s.targets, n, func(t target, n int) int { return len(t.name) - n })
	}
	return s
}

// isKnown reports whether a domain is real: on the known-domain model, the
// free-provider set or the provider index, and not a known typo.
func (s *suggester) isKnown(domain string) bool {
	_, ok := s.known[domain]
	return ok
}

// suggest returns the domain the person probably meant instead of domain
// (lower-case A-label form), or "" when there is none, from the name alone:
// a known typo, a misspelt TLD (fixed on any domain), and, for a domain
// shown not to receive mail (receivesMail false), the nearest target
// within two edits (one for a domain of up to 6 characters). A domain that
// receives mail, or whose DNS could not answer, gets nothing more here:
// [suggester.suggestReceiving] weighs its MX hosts. A real domain is never
// suggested away from; a suggestion is never domain itself.
func (s *suggester) suggest(domain string, receivesMail bool) string {
	if s.isKnown(domain) {
		return ""
	}
	if t, ok := s.typos[domain]; ok {
		return t
	}
	// A misspelt TLD is fixed on any domain: no such TLD exists.
	if i := strings.LastIndexByte(domain, '.'); i > 0 {
		if tld, ok := brokenTLD[domain[i+1:]]; ok {
			fixed := domain[:i+1] + tld
			if s.isKnown(fixed) {
				return fixed
			}
			// Beyond the TLD, one more slip at most: a company's domain
			// two edits from a provider's is still the company's.
			if near := s.nearest(fixed, reachFixedTLD); near != "" {
				return near
			}
			return fixed
		}
	}
	// A slip in the suffix of a known name: fixed anywhere when no such
	// suffix exists, else only on a domain that receives no mail (a real
	// one may be someone's: gmx.st).
	if fixed, real := s.suffixSlip(domain); fixed != "" && !(real && receivesMail) {
		return fixed
	}
	if receivesMail {
		return ""
	}
	return s.nearest(domain, reachNoMail)
}

// suggestReceiving returns the domain probably meant instead of a domain
// that receives mail at mxHosts (most preferred first), classified as dc,
// or "". learnt is what the addresses of its MX hosts say when no host
// name does: the kind of a parking or registrar host seen at one of them
// (parkNone when none). A target within reach is suggested only where the
// evidence says typo (see typoEvidence): on strong evidence (a parking or
// burner host), two edits for a global provider, one for the others; on a
// registrar's default host the same, but only where the name says so
// (see registrarName): never for a short domain (6 characters or fewer),
// nor a short name one letter from a target's, which the registrar's
// real customers far outnumber (haver.com, globe.com, libera.it).
//
// Weak evidence (a third party's host) is what every customer of a web
// host the lists do not name shows too, so it corrects only what few real
// domains look like (see weakName): never a short domain (6 characters or
// fewer), with at most one edit in the name, the part before the first
// dot, and to a target of weight under largeWeight only by a doubled
// letter or two swapped. A name one letter
// from a short provider's name is as likely a company's own (haver.com,
// love.de, globe.com, libera.it, mall.com).
func (s *suggester) suggestReceiving(domain string, mxHosts []string, dc domainClass, learnt parkKind) string {
	if sg := s.suggest(domain, true); sg != "" || s.isKnown(domain) {
		return sg
	}
	if sg := s.doubledGlobal(domain); sg != "" {
		return sg
	}
	switch s.typoEvidence(domain, mxHosts, dc, learnt) {
	case signNone:
		return ""
	case signWeak:
		if len(domain) <= 6 {
			return ""
		}
		return s.nearest(domain, reachWeak)
	case signRegistrar:
		if len(domain) <= 6 {
			return ""
		}
		return s.nearest(domain, reachRegistrar)
	}
	return s.nearest(domain, reachReceiving)
}

// doubledGlobal returns the global provider's domain that domain is with
// one letter of the name doubled and nothing else changed (gmaill.com,
// outlookk.com, yahooo.com), or "". Such a name is a typosquat wherever
// its mail goes, even to a host of its own: nobody names a company so.
func (s *suggester) doubledGlobal(domain string) string {
	name := firstLabel(domain)
	for _, t := range s.targets[s.starts[min(len(domain)-1, len(s.starts)-1)]:] {
		if len(t.name) != len(domain)-1 {
			break
		}
		want := firstLabel(t.name)
		if t.global && len(want)+1 == len(name) && domain[len(name):] == t.name[len(want):] && doubledOrSwapped(name, want) {
			return t.name
		}
	}
	return ""
}

// A name edited at a third party's host must be at least this long: a
// global provider's (whose misspellings far outnumber the companies named
// like it) from minWeakGlobalName characters, another target's from
// minWeakName, or minWeakSlipName when the edit is a doubled letter or
// two letters swapped, slips few real names show.
const (
	minWeakGlobalName = 5
	minWeakName       = 7
	minWeakSlipName   = 6
)

// typoSign is how strongly a domain's MX hosts say typosquat.
type typoSign uint8

const (
	signNone      typoSign = iota // its own host, a provider's or a shared host's: someone's real domain
	signWeak                      // a third party's host, unrelated to it
	signRegistrar                 // a registrar's default mail host
	signStrong                    // a parking service's host, or the domain is disposable
)

// typoEvidence weighs whether a domain that receives mail looks like a
// typosquat rather than someone's real domain: strongly when it is
// disposable or its mail goes to a parking service; as much, short names
// aside, when its mail goes to a registrar's default host (by name, or by
// an address learnt from one: learnt); weakly when its mail goes to a
// host that is neither its own (below its registrable domain) nor a mail
// service's that real organizations use (a provider, gateway or shared
// host).
func (s *suggester) typoEvidence(domain string, mxHosts []string, dc domainClass, learnt parkKind) typoSign {
	if len(mxHosts) == 0 {
		return signNone
	}
	if dc.disposable {
		return signStrong
	}
	park := learnt
	for _, h := range mxHosts {
		park = max(park, s.c.parkedKind(h))
	}
	switch park {
	case parkService:
		return signStrong
	case parkRegistrar:
		return signRegistrar
	}
	for _, h := range mxHosts {
		if isDomainOrSub(h, domain) || s.c.hostedMX(h) {
			return signNone
		}
	}
	// A host below the domain's registrable domain is its own too
	// (mx.example.com for mail.example.com).
	reg, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil {
		return signNone
	}
	for _, h := range mxHosts {
		if isDomainOrSub(h, reg) {
			return signNone
		}
	}
	return signWeak
}

// reach is how far a search for the nearest target may go.
type reach uint8

const (
	reachNoMail    reach = iota // the domain receives no mail: maxDistance for every target
	reachReceiving              // it receives mail: maxDistance for a global target, one edit for the others
	reachWeak                   // as reachReceiving, by name (see weakName)
	reachRegistrar              // as reachReceiving, by name (see registrarName)
	reachFixedTLD               // its TLD was fixed: one edit
)

// largeWeight is the weight from which a target is more than a small or
// legacy provider (about two million mailboxes).
const largeWeight = 2

// maxDistance is how many edits a suggestion may be from a domain: 2, or 1
// for a short domain (6 characters or fewer), where two edits make almost
// anything out of anything.
func maxDistance(domain string) int {
	if len(domain) <= 6 {
		return 1
	}
	return 2
}

// nearest returns the target closest to domain within the reach r, the
// heavier (then the first by name) among equals, or "". Two edits on a
// short name (maxAmbiguousName) that reach two targets give "" unless one
// leads clearly by weight (clearLead): the weights would otherwise pick
// one of two about equally likely intents.
func (s *suggester) nearest(domain string, r reach) string {
	far := maxDistance(domain)
	if r == reachFixedTLD {
		far = 1
	}
	lo, hi := len(domain)-far, len(domain)+far+1
	if lo < 0 {
		lo = 0
	}
	if lo >= len(s.starts) {
		return ""
	}
	end := len(s.targets)
	if hi < len(s.starts) {
		end = s.starts[hi]
	}
	m := byteMask(domain)
	best, bestD, bestW := "", far+1, 0
	secondW := 0 // the heaviest weight of the other targets as close as the best
	for _, t := range s.targets[s.starts[lo]:end] {
		k := far
		switch {
		case (r == reachReceiving || r == reachWeak || r == reachRegistrar) && !t.global:
			k = 1
		}
		if d := len(t.name) - len(domain); d > k || -d > k {
			continue
		}
		// Each edit brings in at most one byte the other side lacks.
		if bits.OnesCount64(m&^t.mask) > k || bits.OnesCount64(t.mask&^m) > k {
			continue
		}
		d := osaDistance(domain, t.name, min(k, bestD))
		if d > k || d > bestD || t.name == domain {
			continue
		}
		if r == reachWeak && !weakName(domain, t) || r == reachRegistrar && !registrarName(domain, t) {
			continue
		}
		better := d < bestD || t.weight > bestW || (t.weight == bestW && t.name < best)
		switch {
		case d < bestD:
			secondW = 0
		case better:
			secondW = max(secondW, bestW)
		default:
			secondW = max(secondW, t.weight)
		}
		if better {
			best, bestD, bestW = t.name, d, t.weight
		}
	}
	if bestD == 2 && secondW > 0 && bestW < clearLead*secondW && len(firstLabel(domain)) <= maxAmbiguousName {
		// Two edits on a short name reach another target as well, of
		// about its size: a guess between them, not a correction.
		return ""
	}
	return best
}

// maxAmbiguousName is the longest name (the part before the first dot)
// on which two edits that reach two targets of about the same weight
// give no suggestion; clearLead is how many times heavier the best must
// be than the next to lead clearly (yahpo.co is yahoo.com's, not
// yahoo.cl's; mali.uz is neither mail.kz's nor mail.az's).
const (
	maxAmbiguousName = 6
	clearLead        = 10
)

// weakName reports whether a domain at a third party's host, within reach
// of target t, may be corrected to it: when it carries t's very name, so
// that the edits are in the suffix (naver.co for naver.com, gmail.co), of
// a small target only a slip of the fingers there; when one edit turns
// its name into a large target's and the name is long enough
// (comcats.net for comcast.net, gnail.co for gmail.com); or when a
// doubled or swapped letter does, on a name of minWeakSlipName or more
// (seznma.cz, ziggoo.nl).
func weakName(domain string, t target) bool {
	name, want := firstLabel(domain), firstLabel(t.name)
	switch osaDistance(name, want, 1) {
	case 0:
		return t.weight >= largeWeight || keySlip(domain[len(name):], t.name[len(want):])
	case 1:
		switch {
		case t.global:
			return len(name) >= minWeakGlobalName
		case doubledOrSwapped(name, want):
			return len(name) >= minWeakSlipName
		}
		return len(name) >= minWeakName && t.weight >= largeWeight
	}
	return false
}

// registrarName reports whether a domain at a registrar's default mail
// host, within reach of target t, may be corrected to it: when it carries
// t's very name and its suffix is a slip of t's (see keySlip); when its name is one edit from a global provider's and
// at least minWeakGlobalName long, or two and at least minWeakName; when
// it is one edit from another target's and at least minWeakName long, or
// at least minWeakGlobalName long and the edit a doubled letter or two
// letters swapped (yahooo.es, hotmial.de), slips few real names show.
func registrarName(domain string, t target) bool {
	name, want := firstLabel(domain), firstLabel(t.name)
	switch osaDistance(name, want, 2) {
	case 0:
		// Only a slip of the fingers in the suffix: mail.com.br is no
		// typo of mail.com.tr.
		return keySlip(domain[len(name):], t.name[len(want):])
	case 1:
		return len(name) >= minWeakName || len(name) >= minWeakGlobalName && (t.global || doubledOrSwapped(name, want))
	case 2:
		return t.global && len(name) >= minWeakName
	}
	return false
}

// doubledOrSwapped reports whether a is b with one letter doubled or two
// adjacent letters swapped.
func doubledOrSwapped(a, b string) bool {
	if len(a) == len(b)+1 {
		for i := 1; i < len(a); i++ {
			if a[i] == a[i-1] && withoutByte(a, i, b) {
				return true
			}
		}
		return false
	}
	if len(a) != len(b) {
		return false
	}
	for i := 0; i+1 < len(a); i++ {
		if a[i] != b[i] {
			return a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
		}
	}
	return false
}

// firstLabel returns d up to its first dot.
func firstLabel(d string) string {
	if i := strings.IndexByte(d, '.'); i >= 0 {
		return d[:i]
	}
	return d
}

// byteMask is the set of bytes in s: a bit each for a-z, 0-9, '-' and
// '.', one for every other byte.
func byteMask(s string) uint64 {
	var m uint64
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case 'a' <= ch && ch <= 'z':
			m |= 1 << (ch - 'a')
		case '0' <= ch && ch <= '9':
			m |= 1 << (26 + ch - '0')
		case ch == '-':
			m |= 1 << 36
		case ch == '.':
			m |= 1 << 37
		default:
			m |= 1 << 63
		}
	}
	return m
}

// osaDistance returns the optimal-string-alignment distance between a and
// b (insertions, deletions, substitutions and transpositions of adjacent
// bytes, no substring edited twice), or k+1 as soon as it must exceed k.
func osaDistance(a, b string, k int) int {
	if k < 0 {
		return k + 1
	}
	const stack = 64
	var buf [3 * (stack + 1)]int
	n := len(b) + 1
	var rows []int
	if n <= stack+1 {
		rows = buf[:3*n]
	} else {
		rows = make([]int, 3*n)
	}
	prev2, prev, cur := rows[:n], rows[n:2*n], rows[2*n:]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j < n; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > k {
			return k + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[n-1], k+1)
}
