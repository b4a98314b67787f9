package emailcheck

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

//go:embed data/known_domains.txt
var embeddedKnown string

// domainKind is what the known-domain model says a domain is; it decides
// how far a typo suggestion may reach for it.
type domainKind uint8

const (
	kindGlobal   domainKind = iota // a top consumer provider: two edits, even when the typo receives mail
	kindRegional                   // a regional provider or another domain of a global one: one edit when the typo receives mail
	kindISP                        // an internet service provider's mailboxes: as regional
	kindLeave                      // an organization's own mail, or a small provider: never corrected, never a target
)

// freeFact is whether anyone can open a mailbox at a known domain at no
// cost.
type freeFact uint8

const (
	freeUnknown freeFact = iota // the embedded free list decides
	freeYes                     // anyone, at no cost
	freePaid                    // a mailbox costs money
	freeSub                     // a mailbox comes with another paid service
	freeOrg                     // an organization's mail
)

// knownDomain is one entry of the known-domain model.
type knownDomain struct {
	name   string
	kind   domainKind
	weight int // rough size; breaks ties between equally close targets
	free   freeFact
}

// target reports whether a typo suggestion may lead to the domain.
func (k knownDomain) target() bool { return k.kind != kindLeave }

// parseKnown reads the known-domain model (data/known_domains.txt): tab-
// separated domain, kind, weight, free fact and an optional note.
func parseKnown(data string) ([]knownDomain, error) {
	var out []knownDomain
	n := 0
	for line := range strings.Lines(data) {
		n++
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 4 || len(f) > 5 {
			return nil, fmt.Errorf("known domains line %d: %d fields, want 4 or 5", n, len(f))
		}
		k := knownDomain{name: f[0]}
		switch f[1] {
		case "global":
			k.kind = kindGlobal
		case "regional":
			k.kind = kindRegional
		case "isp":
			k.kind = kindISP
		case "business", "other":
			k.kind = kindLeave
		default:
			return nil, fmt.Errorf("known domains line %d: kind %q", n, f[1])
		}
		if f[2] != "-" {
			w, err := strconv.Atoi(f[2])
			if err != nil || w <= 0 {
				return nil, fmt.Errorf("known domains line %d: weight %q", n, f[2])
			}
			k.weight = w
		}
		if (k.weight == 0) != (k.kind == kindLeave) {
			return nil, fmt.Errorf("known domains line %d: a weight belongs to a target, and only to one", n)
		}
		switch f[3] {
		case "?":
			k.free = freeUnknown
		case "free":
			k.free = freeYes
		case "paid":
			k.free = freePaid
		case "sub":
			k.free = freeSub
		case "org":
			k.free = freeOrg
		default:
			return nil, fmt.Errorf("known domains line %d: free fact %q", n, f[3])
		}
		out = append(out, k)
	}
	return out, nil
}
