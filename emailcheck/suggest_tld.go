package emailcheck

import (
	"strings"

	"golang.org/x/net/publicsuffix"
)

// suffixIndex maps the name of each known domain, the part before its
// public suffix (hotmail for hotmail.com.ar), to the suffixes it is known
// under, with the weight of the heaviest target among them.
type suffixIndex map[string][]knownSuffix

// knownSuffix is one public suffix a known name is registered under.
type knownSuffix struct {
	suffix string
	weight int // the target's weight; 0 for a known domain that is no target
}

// add records a known domain under its name, with its weight as a target.
func (x suffixIndex) add(domain string, weight int) {
	suffix, _ := publicsuffix.PublicSuffix(domain)
	if len(suffix) >= len(domain) {
		return
	}
	name := domain[:len(domain)-len(suffix)-1]
	for i, k := range x[name] {
		if k.suffix == suffix {
			x[name][i].weight = max(k.weight, weight)
			return
		}
	}
	x[name] = append(x[name], knownSuffix{suffix: suffix, weight: weight})
}

// suffixSlip returns the known domain that domain, itself not known, is
// a keyboard slip of in its suffix (see keySlip): the same name under a
// suffix it is known under (gmx.ed for gmx.de, hotmail.con.ar for
// hotmail.com.ar, yahoo.om for yahoo.com), the heavier target first,
// then the first by name. real reports whether the typed suffix is itself
// a public suffix (yahoo.om, .om being Oman's), when the typed domain may
// be someone's own; else no such suffix exists and the slip is certain.
func (s *suggester) suffixSlip(domain string) (fixed string, real bool) {
	bestW, at := -1, 0
	for i := strings.IndexByte(domain, '.'); i > 0; {
		name, suffix := domain[:i], domain[i+1:]
		for _, k := range s.suffixes[name] {
			if k.weight < bestW || !keySlip(suffix, k.suffix) {
				continue
			}
			cand := name + "." + k.suffix
			if k.weight > bestW || cand < fixed {
				fixed, bestW, at = cand, k.weight, i+1
			}
		}
		j := strings.IndexByte(domain[i+1:], '.')
		if j < 0 {
			break
		}
		i += j + 1
	}
	if fixed == "" {
		return "", false
	}
	typed, icann := publicsuffix.PublicSuffix(domain)
	return fixed, icann && typed == domain[at:]
}

// keySlip reports whether typed is want with one slip of the fingers: a
// letter replaced by one of its neighbours on a QWERTY keyboard (con for
// com), two adjacent letters swapped (cmo, ed for de), a letter doubled
// (comm) or one left out (om, co.k).
func keySlip(typed, want string) bool {
	switch {
	case len(typed) == len(want):
		i := 0
		for i < len(typed) && typed[i] == want[i] {
			i++
		}
		if i == len(typed) {
			return false
		}
		if typed[i+1:] == want[i+1:] {
			return keysAdjacent(typed[i], want[i])
		}
		return i+1 < len(typed) && typed[i] == want[i+1] && typed[i+1] == want[i] && typed[i+2:] == want[i+2:]
	case len(typed) == len(want)+1:
		for i := 1; i < len(typed); i++ {
			if typed[i] == typed[i-1] && withoutByte(typed, i, want) {
				return true
			}
		}
	case len(typed)+1 == len(want):
		for i := 0; i < len(want); i++ {
			if withoutByte(want, i, typed) {
				return true
			}
		}
	}
	return false
}

// withoutByte reports whether a without its byte at i is b, without
// building that string.
func withoutByte(a string, i int, b string) bool {
	return len(a) == len(b)+1 && a[:i] == b[:i] && a[i+1:] == b[i:]
}

// qwertyRows are the letter rows of a QWERTY keyboard, each shifted half
// a key right of the one above.
var qwertyRows = [3]string{"qwertyuiop", "asdfghjkl", "zxcvbnm"}

// keysAdjacent reports whether two letters are neighbours on a QWERTY
// keyboard: side by side, or touching on the row above or below.
func keysAdjacent(a, b byte) bool {
	ra, ca := keyPos(a)
	rb, cb := keyPos(b)
	if ra < 0 || rb < 0 {
		return false
	}
	switch ra - rb {
	case 0:
		return ca-cb == 1 || cb-ca == 1
	case 1: // a on the row below b: its upper neighbours are b's columns ca and ca+1
		return cb == ca || cb == ca+1
	case -1:
		return ca == cb || ca == cb+1
	}
	return false
}

// keyPos returns the row and column of a lower-case letter on a QWERTY
// keyboard, or -1, -1.
func keyPos(ch byte) (row, col int) {
	for r, keys := range qwertyRows {
		if c := strings.IndexByte(keys, ch); c >= 0 {
			return r, c
		}
	}
	return -1, -1
}
