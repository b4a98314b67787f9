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
// valid UTF-8 without control characters or U+FFFD (what the JSON decoder
// leaves of bytes that are not UTF-8).
func cleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// Bounds of a cursor this API gives.
const (
	// maxCursor bounds a cursor's length: a time and an id, in base64.
	maxCursor = 256
	// maxCursorMicros is the end of the year 9999 in microseconds since
	// the epoch: no stored time is later.
	maxCursorMicros = 253402300799999999
)

// printableASCII reports whether s is made of printable ASCII characters
// only, as every id the API gives is.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// numericID reports whether s is a numeric id as the stores give them:
// 1 to 19 digits.
func numericID(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
