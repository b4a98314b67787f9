package httpapi

import (
	"strings"
	"unicode/utf8"
)

// MaxAddressBytes bounds an input address: no mailbox is longer than 254
// octets, so a longer input is refused before anything is charged rather
// than validated and echoed back.
const MaxAddressBytes = 1024

// cleanAddress returns an input address as the API validates it: without
// surrounding ASCII white space (a pasted address often carries some), and
// storable by every backend: invalid UTF-8 and NUL bytes become U+FFFD,
// which the validator refuses as INVALID_FORMAT, so such an address is a
// result like any malformed one. ok is false for an address longer than
// MaxAddressBytes.
func cleanAddress(s string) (string, bool) {
	s = strings.Trim(s, " \t\r\n\f\v")
	if len(s) > MaxAddressBytes {
		return "", false
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s, true
}

// cleanText reports whether s, a key name or a header the API stores, is
// valid UTF-8 without control characters.
func cleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}
