package emailcheck

import (
	_ "embed"
	"slices"
	"strconv"
	"strings"
)

//go:embed data/popular_domains.txt
var embeddedPopular string

// popularDomain is one entry of the popular-domain list.
type popularDomain struct {
	name   string
	weight int
	top    bool // one-edit variants are suggested even when they receive mail
}

// suggester proposes the domain a person most likely meant to type. It is
// immutable after construction and safe for concurrent use.
type suggester struct {
	popular []popularDomain     // by weight, largest first, then by name
	top     []popularDomain     // the popular entries marked top
	known   map[string]struct{} // real providers: never suggested away from
	typos   map[string]string   // known typo domain → the intended one
}

// brokenTLD maps misspellings of the common top-level domains, none of
// which is a delegated TLD, to the intended one.
var brokenTLD = map[string]string{
	"con": "com", "cmo": "com", "coom": "com", "ocm": "com", "comm": "com", "cpm": "com",
	"vom": "com", "xom": "com", "copm": "com", "colm": "com", "cim": "com",
	"nte": "net", "ner": "net", "nett": "net",
	"ogr": "org", "orgg": "org", "rog": "org",
}

// newSuggester builds the suggester from the embedded popular list, the
// free-provider set and the provider index (real providers), and the typo
// exclusions of the free list.
func newSuggester(c *classifier) *suggester {
	s := &suggester{known: make(map[string]struct{}), typos: make(map[string]string)}
	for line := range strings.Lines(embeddedPopular) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0][0] == '#' {
			continue
		}
		w, _ := strconv.Atoi(f[1])
		p := popularDomain{name: f[0], weight: w, top: len(f) > 2 && f[2] == "top"}
		s.popular = append(s.popular, p)
		s.known[p.name] = struct{}{}
	}
	slices.SortFunc(s.popular, func(a, b popularDomain) int {
		if a.weight != b.weight {
			return b.weight - a.weight
		}
		return strings.Compare(a.name, b.name)
	})
	for _, p := range s.popular {
		if p.top {
			s.top = append(s.top, p)
		}
	}
	for d := range c.free {
		s.known[d] = struct{}{}
	}
	for d := range c.byDomain {
		s.known[d] = struct{}{}
	}
	for line := range strings.Lines(embeddedFreeExclusions) {
		d, reason, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && strings.HasPrefix(reason, "typo of ") {
			s.typos[d] = strings.TrimPrefix(reason, "typo of ")
		}
	}
	return s
}

// suggest returns the domain the person probably meant instead of domain
// (lower-case A-label form), or "" when there is none. receivesMail says
// whether DNS showed a usable mail server (or could not tell): then only
// misspellings one edit away from the largest providers are corrected,
// since typosquatters do run mail servers, and a real domain is never
// suggested away from. A suggestion is never domain itself.
func (s *suggester) suggest(domain string, receivesMail bool) string {
	if _, ok := s.known[domain]; ok {
		return ""
	}
	if t, ok := s.typos[domain]; ok {
		return t
	}
	// A misspelt TLD is fixed on any domain: no such TLD exists.
	if i := strings.LastIndexByte(domain, '.'); i > 0 {
		if tld, ok := brokenTLD[domain[i+1:]]; ok {
			fixed := domain[:i+1] + tld
			if _, ok := s.known[fixed]; ok {
				return fixed
			}
			if near := s.nearest(s.popular, fixed, maxDistance(fixed)); near != "" {
				return near
			}
			return fixed
		}
	}
	if receivesMail {
		return s.nearest(s.top, domain, 1)
	}
	return s.nearest(s.popular, domain, maxDistance(domain))
}

// maxDistance is how many edits a suggestion may be from a domain that
// receives no mail: 2, or 1 for a short domain (6 characters or fewer),
// where two edits make almost anything out of anything.
func maxDistance(domain string) int {
	if len(domain) <= 6 {
		return 1
	}
	return 2
}

// nearest returns the entry of list closest to domain within k edits,
// the first in list order among equals (list is sorted by weight, then
// name), or "".
func (s *suggester) nearest(list []popularDomain, domain string, k int) string {
	best, bestD := "", k+1
	for _, p := range list {
		if d := len(p.name) - len(domain); d > k || -d > k {
			continue
		}
		if d := osaDistance(domain, p.name, bestD-1); d < bestD && p.name != domain {
			best, bestD = p.name, d
			if d == 0 {
				break
			}
		}
	}
	return best
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
