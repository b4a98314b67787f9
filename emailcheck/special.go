package emailcheck

import "strings"

// isSpecialUse reports whether a lower-case A-label domain is, or is below,
// a reserved or special-use name, which never carries deliverable public
// mail: the top-level names of RFC 2606 (test, example, invalid, localhost),
// RFC 6762 (local), RFC 7686 (onion), RFC 3172 (arpa, which covers home.arpa
// of RFC 8375), RFC 9476 (alt) and ICANN's private-use "internal"; and the
// second-level names example.com, example.net and example.org (RFC 2606).
func isSpecialUse(domain string) bool {
	switch domain[strings.LastIndexByte(domain, '.')+1:] {
	case "test", "example", "invalid", "localhost", "local", "onion", "arpa", "alt", "internal":
		return true
	}
	return isDomainOrSub(domain, "example.com") || isDomainOrSub(domain, "example.net") ||
		isDomainOrSub(domain, "example.org")
}

// isDomainOrSub reports whether domain equals parent or is below it.
func isDomainOrSub(domain, parent string) bool {
	if !strings.HasSuffix(domain, parent) {
		return false
	}
	return len(domain) == len(parent) || domain[len(domain)-len(parent)-1] == '.'
}
