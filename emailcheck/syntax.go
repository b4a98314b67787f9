package emailcheck

import (
	"errors"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// ErrSyntax is matched (with errors.Is) by every error ParseAddress returns.
var ErrSyntax = errors.New("emailcheck: invalid syntax")

// syntaxError is a reason for rejecting an address. Every value wraps
// ErrSyntax, and the reasons are allocated once so that returning one
// allocates nothing.
type syntaxError struct{ msg string }

func newSyntaxError(reason string) error {
	return &syntaxError{msg: ErrSyntax.Error() + ": " + reason}
}

func (e *syntaxError) Error() string { return e.msg }
func (e *syntaxError) Unwrap() error { return ErrSyntax }

// Reasons ParseAddress gives for rejecting an address. Each wraps ErrSyntax.
var (
	// ErrEmpty: the input is empty.
	ErrEmpty = newSyntaxError("empty address")
	// ErrTooLong: the address is longer than 254 octets, as written or with
	// its domain in A-label form.
	ErrTooLong = newSyntaxError("address longer than 254 octets")
	// ErrNoAt: the input has no @ sign.
	ErrNoAt = newSyntaxError("missing @ sign")
	// ErrMultipleAt: an @ sign appears outside a quoted local part after the
	// first one.
	ErrMultipleAt = newSyntaxError("more than one @ sign")
	// ErrEmptyLocal: nothing (or an empty quoted string) before the @ sign.
	ErrEmptyLocal = newSyntaxError("empty local part")
	// ErrLocalTooLong: the local part is longer than 64 octets.
	ErrLocalTooLong = newSyntaxError("local part longer than 64 octets")
	// ErrLocalPart: the local part is not a dot-atom: a character outside
	// atext, or a leading, trailing or doubled dot.
	ErrLocalPart = newSyntaxError("invalid local part")
	// ErrNonASCIILocal: the local part has non-ASCII characters and
	// SyntaxOptions.ASCIILocalOnly is set.
	ErrNonASCIILocal = newSyntaxError("non-ASCII local part not allowed")
	// ErrQuoted: a quoted local part where it is not allowed, or a malformed
	// one.
	ErrQuoted = newSyntaxError("quoted local part not allowed or malformed")
	// ErrDomain: the domain is empty or not made of LDH labels (empty label,
	// character outside letters, digits and hyphen, leading or trailing
	// hyphen, "--" in the third and fourth positions of a label other than
	// xn--).
	ErrDomain = newSyntaxError("invalid domain")
	// ErrDotlessDomain: the domain has a single label.
	ErrDotlessDomain = newSyntaxError("domain has no dot")
	// ErrTrailingDot: the domain ends with a dot.
	ErrTrailingDot = newSyntaxError("domain ends with a dot")
	// ErrNumericTLD: the last label does not end with a letter (all-numeric
	// top-level domains, dotted IPv4 addresses without brackets).
	ErrNumericTLD = newSyntaxError("top-level domain does not end with a letter")
	// ErrLabelTooLong: a domain label is longer than 63 octets.
	ErrLabelTooLong = newSyntaxError("domain label longer than 63 octets")
	// ErrDomainTooLong: the domain is longer than 253 octets in A-label
	// form.
	ErrDomainTooLong = newSyntaxError("domain longer than 253 octets")
	// ErrIDN: an internationalized domain or an xn-- label that UTS #46
	// lookup rejects, or whose labels fall outside the IDNA2008 repertoire.
	ErrIDN = newSyntaxError("invalid internationalized domain")
	// ErrLiteral: an address literal where it is not allowed, or one that is
	// not a valid [IPv4] or [IPv6:...] literal.
	ErrLiteral = newSyntaxError("address literal not allowed or malformed")
	// ErrWhitespace: a space, tab, line break or other Unicode white space,
	// including folding white space and surrounding spaces.
	ErrWhitespace = newSyntaxError("white space in address")
	// ErrControl: a control character.
	ErrControl = newSyntaxError("control character in address")
	// ErrInvisible: a character that is invisible or has no meaning: a
	// Unicode format character (category Cf: zero-width space and joiners,
	// soft hyphen, bidirectional overrides, byte-order mark, word joiner),
	// a private-use (Co), surrogate (Cs) or unassigned (Cn) code point.
	// Such an address looks like another one, or like nothing at all.
	ErrInvisible = newSyntaxError("invisible or unassigned character in address")
	// ErrInvalidUTF8: the input is not valid UTF-8, or contains U+FFFD, the
	// replacement character left by an earlier broken decoding.
	ErrInvalidUTF8 = newSyntaxError("invalid UTF-8")
	// ErrComment: a parenthesised comment.
	ErrComment = newSyntaxError("comments are not allowed")
	// ErrDisplayName: a display name or angle brackets (Name <user@host>);
	// only the bare address is accepted.
	ErrDisplayName = newSyntaxError("display name or angle brackets are not allowed")
)

// SyntaxOptions selects the optional syntax of ParseAddress. The zero value
// is the default deliverability profile.
type SyntaxOptions struct {
	// AllowQuotedLocal accepts an RFC 5321 quoted-string as the local part
	// ("john doe"@example.com).
	AllowQuotedLocal bool
	// AllowAddressLiteral accepts an address literal as the domain
	// (user@[192.0.2.1], user@[IPv6:2001:db8::1]).
	AllowAddressLiteral bool
	// ASCIILocalOnly rejects local parts with non-ASCII characters
	// (SMTPUTF8, RFC 6531), quoted or not.
	ASCIILocalOnly bool
}

// Address is a parsed mailbox.
type Address struct {
	// Local is the local part as written.
	Local string
	// Domain is the domain as written (possibly Unicode), or the address
	// literal including its brackets.
	Domain string
	// ASCIIDomain is the lower-case A-label form of Domain used for DNS, or
	// the literal including its brackets.
	ASCIIDomain string
	// IsLiteral reports an address literal.
	IsLiteral bool
}

const (
	maxAddress = 254
	maxLocal   = 64
	maxDomain  = 253
	maxLabel   = 63
)

// Byte classes of the lookup table below.
const (
	cBad   = 0
	cAtext = 1 << iota // RFC 5322 atext
	cLDH               // letter, digit, hyphen
	cUpper             // A-Z
	cAlpha             // letter
)

var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = cAtext | cLDH | cAlpha
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = cAtext | cLDH | cAlpha | cUpper
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = cAtext | cLDH
	}
	t['-'] = cAtext | cLDH
	for _, c := range "!#$%&'*+/=?^_`{|}~" {
		t[c] = cAtext
	}
	return t
}()

// ParseAddress parses s as an RFC 5321 mailbox (local-part "@" domain) under
// the deliverability profile: the syntax mail systems in use deliver to,
// rather than everything RFC 5322 allows in a message header. The input is
// taken as is: nothing is trimmed, unquoted or decoded.
//
// Local part (default): a dot-atom of RFC 5322 atext (letters, digits and
// !#$%&'*+-/=?^_`{|}~) separated by single dots, with no leading or trailing
// dot. Non-ASCII characters (SMTPUTF8, RFC 6531/6532) are accepted when they
// are valid UTF-8 and neither control characters (Cc), white space (Unicode
// Z categories and other white space) nor U+FFFD, the mark of an earlier
// broken decoding; SyntaxOptions.ASCIILocalOnly rejects them. A non-ASCII
// local part must also be acceptable in Unicode NFC (RFC 6532 §3.1), so
// U+037E, which normalizes to ';', is rejected. The local part is at most 64
// octets, as written and in NFC. A local part over 64 octets is rejected
// even though some validators accept it: RFC 5321 §4.5.3.1.1 sets the limit
// and servers may enforce it.
//
// Quoted local part (SyntaxOptions.AllowQuotedLocal, off by default): the
// whole local part is one RFC 5321 quoted-string: qtext (printable ASCII and
// space except " and \) and quoted-pairs (\ followed by printable ASCII or
// space), plus non-ASCII UTF-8 as in RFC 6531 unless ASCIILocalOnly. Tabs,
// line breaks and other control characters are rejected even inside quotes.
// The empty quoted string ("") is rejected like an empty local part: it names
// no mailbox a deliverability check can vouch for. Only when this option is
// on and the input starts with a double quote is the address split at its
// last @ sign (an @ may appear inside the quotes); otherwise the input must
// contain exactly one @.
//
// Domain (default): labels of letters, digits and hyphens (no leading or
// trailing hyphen, 1 to 63 octets each, and no "--" in the third and fourth
// positions except in xn-- labels, RFC 5891 §4.2.3.1), at least one dot, and
// a last label that ends in a letter, so all-numeric top-level domains and
// bare IPv4 addresses such as 1.2.3.4 are rejected while xn-- top-level
// domains are accepted. A trailing dot is rejected.
//
// Internationalized domains: a domain with non-ASCII characters, or with a
// label starting with xn-- (in any case), is converted with
// golang.org/x/net/idna's UTS #46 lookup profile (idna.Lookup), which maps it
// (case folding, width and full-stop variants such as "。"), checks it, and
// decodes and re-checks xn-- labels, so an xn-- label must be valid punycode
// of a valid label (xn--example is not). The resulting A-labels must meet the
// rules above, and the U-labels must keep to the IDNA2008 repertoire (RFC
// 5892: letters, combining marks and decimal digits, with the RFC's
// exceptions): symbols, punctuation and emoji that UTS #46 alone would accept
// (test@😆.org, test@email€a.com) are rejected, since registries follow
// IDNA2008, and so are unassigned code points.
//
// Lengths: the domain is at most 253 octets in A-label form, and the whole
// address at most 254 octets both as written and with the A-label domain.
//
// Special-use and reserved names (.test, .invalid, .localhost, example.com,
// ...) are syntactically valid and accepted here; the validator reports them
// as invalid addresses.
//
// Address literal (SyntaxOptions.AllowAddressLiteral, off by default): the
// domain is [IPv4] with a dotted-quad address, or [IPv6:...] (tag in any
// case) with an IPv6 address, both checked with net/netip (no zones, no
// leading zeros in IPv4 parts). A "::" that stands for a single zero group,
// which RFC 5321's ABNF forbids but the RFC 4291 text form allows, is
// accepted: it denotes exactly one address, and the IPv6 parsers mail
// software relies on (inet_pton and its kin) read it. General address
// literals ([tag:...]) and bare IPv6 addresses without the tag are rejected.
//
// Always rejected: empty input, comments, folding white space, display names
// and angle brackets, surrounding or inner white space, control characters,
// invalid UTF-8 or U+FFFD anywhere, and invisible or unassigned characters
// (Unicode categories Cf, Co, Cs and Cn: zero-width space and joiners, soft
// hyphen, bidirectional marks and overrides, byte-order mark, word joiner,
// private-use code points) in the local part or the domain: ErrInvisible.
// In a domain they are refused before IDNA mapping, which would silently
// drop some of them (a soft hyphen vanishes).
//
// On success, Local and Domain are the input on each side of the @, so
// Local+"@"+Domain == s; ASCIIDomain is the lower-case A-label form without a
// trailing dot (for a literal, the literal as written, brackets included),
// and IsLiteral reports a literal. Every error wraps ErrSyntax and is one of
// the reasons declared in this package (ErrNoAt, ErrLocalTooLong, ...), so
// callers can tell why with errors.Is. Rejecting allocates nothing outside
// IDNA conversion, and an ASCII address whose domain is in lower case is
// parsed without allocating.
func ParseAddress(s string, opts SyntaxOptions) (Address, error) {
	a, err := parseAddress(s, opts)
	if err != nil {
		return Address{}, diagnose(s, err)
	}
	return a, nil
}

func parseAddress(s string, opts SyntaxOptions) (Address, error) {
	if s == "" {
		return Address{}, ErrEmpty
	}
	if len(s) > maxAddress {
		return Address{}, ErrTooLong
	}
	var at int
	if opts.AllowQuotedLocal && s[0] == '"' {
		at = strings.LastIndexByte(s, '@')
		if at < 0 {
			return Address{}, ErrNoAt
		}
	} else {
		at = strings.IndexByte(s, '@')
		if at < 0 {
			return Address{}, ErrNoAt
		}
		if strings.IndexByte(s[at+1:], '@') >= 0 {
			return Address{}, ErrMultipleAt
		}
	}
	local, domain := s[:at], s[at+1:]
	localLen, err := checkLocal(local, opts)
	if err != nil {
		return Address{}, err
	}
	a := Address{Local: local, Domain: domain}
	if domain != "" && domain[0] == '[' {
		if err := checkLiteral(domain, opts); err != nil {
			return Address{}, err
		}
		a.ASCIIDomain, a.IsLiteral = domain, true
		return a, nil
	}
	ascii, err := domainToASCII(domain)
	if err != nil {
		return Address{}, err
	}
	if localLen+1+len(ascii) > maxAddress {
		return Address{}, ErrTooLong
	}
	a.ASCIIDomain = ascii
	return a, nil
}

// diagnose replaces a generic reason with ErrDisplayName when the input looks
// like "Name <user@host>", the most common reason such inputs fail.
func diagnose(s string, err error) error {
	if err == ErrEmpty || err == ErrInvalidUTF8 {
		return err
	}
	if lt := strings.IndexByte(s, '<'); lt >= 0 && strings.IndexByte(s[lt:], '>') > 0 {
		return ErrDisplayName
	}
	return err
}

// badByte names the reason an ASCII byte is not allowed where it appears.
func badByte(c byte, fallback error) error {
	switch {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		return ErrWhitespace
	case c < 0x20 || c == 0x7f:
		return ErrControl
	case c == '(' || c == ')':
		return ErrComment
	case c == '<' || c == '>':
		return ErrDisplayName
	case c == '"':
		return ErrQuoted
	case c == '@':
		return ErrMultipleAt
	}
	return fallback
}

// checkRune checks a non-ASCII character of a local part starting at s[0]
// and returns its length.
func checkRune(s string, opts SyntaxOptions) (int, error) {
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError: // invalid, or U+FFFD left by a broken decoding
		return 0, ErrInvalidUTF8
	case unicode.IsControl(r):
		return 0, ErrControl
	case unicode.IsSpace(r) || unicode.In(r, unicode.Z):
		return 0, ErrWhitespace
	case invisible(r):
		return 0, ErrInvisible
	case opts.ASCIILocalOnly:
		return 0, ErrNonASCIILocal
	}
	return size, nil
}

// invisible reports whether r is a format (Cf), private-use (Co),
// surrogate (Cs) or unassigned (Cn) code point. Letters, marks, digits,
// punctuation and symbols of every script are not.
func invisible(r rune) bool {
	if unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc)
}

// checkLocal checks a local part and returns its length in octets, the
// larger of its lengths as written and in NFC.
func checkLocal(l string, opts SyntaxOptions) (int, error) {
	ascii, err := checkLocalForm(l, opts)
	if err != nil || ascii || norm.NFC.IsNormalString(l) {
		return len(l), err
	}
	// RFC 6532 §3.1: the local part should be in NFC; the normalized form
	// must be acceptable too (U+037E normalizes to ';', and normalization
	// can make it longer).
	nfc := norm.NFC.String(l)
	if _, err := checkLocalForm(nfc, opts); err != nil {
		return 0, err
	}
	return max(len(l), len(nfc)), nil
}

// checkLocalForm checks one form of a local part and reports whether it is
// all ASCII.
func checkLocalForm(l string, opts SyntaxOptions) (ascii bool, err error) {
	if l == "" {
		return false, ErrEmptyLocal
	}
	if l[0] == '"' && opts.AllowQuotedLocal {
		return checkQuoted(l, opts)
	}
	if len(l) > maxLocal {
		return false, ErrLocalTooLong
	}
	if l[0] == '.' || l[len(l)-1] == '.' {
		return false, ErrLocalPart
	}
	ascii = true
	for i := 0; i < len(l); {
		c := l[i]
		if byteClass[c]&cAtext != 0 {
			i++
			continue
		}
		switch {
		case c == '.':
			if l[i-1] == '.' {
				return false, ErrLocalPart
			}
			i++
		case c >= utf8.RuneSelf:
			n, err := checkRune(l[i:], opts)
			if err != nil {
				return false, err
			}
			ascii = false
			i += n
		default:
			return false, badByte(c, ErrLocalPart)
		}
	}
	return ascii, nil
}

// checkQuoted checks a local part that starts with a double quote.
func checkQuoted(l string, opts SyntaxOptions) (ascii bool, err error) {
	if len(l) > maxLocal {
		return false, ErrLocalTooLong
	}
	if len(l) < 2 || l[len(l)-1] != '"' {
		return false, ErrQuoted
	}
	if len(l) == 2 {
		return false, ErrEmptyLocal
	}
	body := l[1 : len(l)-1]
	ascii = true
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 == len(body) {
				return false, ErrQuoted // escapes the closing quote
			}
			if n := body[i+1]; n < 0x20 || n > 0x7e {
				if n >= utf8.RuneSelf {
					return false, ErrQuoted
				}
				return false, badByte(n, ErrQuoted)
			}
			i += 2
		case c == '"':
			return false, ErrQuoted
		case c >= 0x20 && c <= 0x7e:
			i++
		case c >= utf8.RuneSelf:
			n, err := checkRune(body[i:], opts)
			if err == ErrWhitespace {
				err = ErrQuoted // only ASCII space is quotable
			}
			if err != nil {
				return false, err
			}
			ascii = false
			i += n
		default:
			return false, badByte(c, ErrQuoted)
		}
	}
	return ascii, nil
}

// checkLiteral checks an address literal, a domain that starts with "[".
func checkLiteral(d string, opts SyntaxOptions) error {
	if !opts.AllowAddressLiteral {
		return ErrLiteral
	}
	if len(d) < 2 || d[len(d)-1] != ']' {
		return ErrLiteral
	}
	body := d[1 : len(d)-1]
	const tag = "IPv6:"
	if len(body) > len(tag) && strings.EqualFold(body[:len(tag)], tag) {
		body = body[len(tag):]
		if strings.IndexByte(body, '%') >= 0 {
			return ErrLiteral
		}
		ip, err := netip.ParseAddr(body)
		if err != nil || !ip.Is6() {
			return ErrLiteral
		}
		return nil
	}
	if strings.IndexByte(body, ':') >= 0 {
		return ErrLiteral
	}
	ip, err := netip.ParseAddr(body)
	if err != nil || !ip.Is4() {
		return ErrLiteral
	}
	return nil
}

// domainToASCII checks a domain name and returns its lower-case A-label form.
func domainToASCII(d string) (string, error) {
	upper, needIDNA, err := checkASCIIDomain(d)
	if err != nil {
		return "", err
	}
	if !needIDNA {
		if upper {
			return strings.ToLower(d), nil
		}
		return d, nil
	}
	// Reject what IDNA would also reject, but with a precise reason.
	for i := 0; i < len(d); {
		c := d[i]
		if c < utf8.RuneSelf {
			if c != '.' && byteClass[c]&cLDH == 0 {
				return "", badByte(c, ErrDomain)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(d[i:])
		switch {
		case r == utf8.RuneError:
			return "", ErrInvalidUTF8
		case unicode.IsControl(r):
			return "", ErrControl
		case unicode.IsSpace(r) || unicode.In(r, unicode.Z):
			return "", ErrWhitespace
		case invisible(r):
			// UTS #46 would map some of these away (a soft hyphen
			// vanishes): an address that looks like another must not
			// quietly become it.
			return "", ErrInvisible
		}
		i += size
	}
	if d[len(d)-1] == '.' {
		return "", ErrTrailingDot
	}
	ascii, err := idna.Lookup.ToASCII(d)
	if err != nil {
		return "", ErrIDN
	}
	if _, _, err := checkASCIIDomain(ascii); err != nil {
		return "", err
	}
	for i := 0; i < len(ascii); i++ {
		if ascii[i] >= utf8.RuneSelf || byteClass[ascii[i]]&cUpper != 0 {
			return "", ErrIDN // not expected from the lookup profile
		}
	}
	// UTS #46 accepts symbols, punctuation and emoji that IDNA2008 (RFC
	// 5892) disallows and registries refuse; check the U-labels against the
	// IDNA2008 repertoire.
	u, err := idna.Lookup.ToUnicode(ascii)
	if err != nil {
		return "", ErrIDN
	}
	for _, r := range u {
		if r >= utf8.RuneSelf && !idna2008Valid(r) {
			return "", ErrIDN
		}
	}
	return ascii, nil
}

// idna2008Valid approximates RFC 5892's derived property for a non-ASCII
// code point already mapped by UTS #46: letters, combining marks and decimal
// digits (the LetterDigits category), adjusted by the RFC's exceptions.
func idna2008Valid(r rune) bool {
	switch r {
	case 0x00DF, 0x03C2, 0x06FD, 0x06FE, 0x0F0B, 0x3007, // PVALID exceptions
		0x00B7, 0x0375, 0x05F3, 0x05F4, 0x30FB, // CONTEXTO
		0x200C, 0x200D: // CONTEXTJ, checked by the lookup profile
		return true
	case 0x0640, 0x07FA, 0x302E, 0x302F, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303B:
		return false // DISALLOWED exceptions
	}
	if (r >= 0x1100 && r <= 0x11FF) || (r >= 0xA960 && r <= 0xA97F) || (r >= 0xD7B0 && r <= 0xD7FF) {
		return false // old Hangul Jamo
	}
	return unicode.In(r, unicode.Ll, unicode.Lu, unicode.Lo, unicode.Lm, unicode.Mn, unicode.Mc, unicode.Nd)
}

// checkASCIIDomain checks the LDH rules on d. It stops early with needIDNA
// set at the first non-ASCII byte; needIDNA is also set for an xn-- label.
func checkASCIIDomain(d string) (upper, needIDNA bool, err error) {
	if d == "" {
		return false, false, ErrDomain
	}
	start := 0
	dots := 0
	for i := 0; i <= len(d); i++ {
		if i < len(d) {
			c := d[i]
			cl := byteClass[c]
			if cl&cLDH != 0 {
				upper = upper || cl&cUpper != 0
				continue
			}
			if c >= utf8.RuneSelf {
				return upper, true, nil
			}
			if c != '.' {
				return upper, false, badByte(c, ErrDomain)
			}
			dots++
		}
		label := d[start:i]
		switch {
		case label == "":
			if i == len(d) {
				return upper, false, ErrTrailingDot
			}
			return upper, false, ErrDomain
		case len(label) > maxLabel:
			return upper, false, ErrLabelTooLong
		case label[0] == '-' || label[len(label)-1] == '-':
			return upper, false, ErrDomain
		case len(label) >= 4 && label[2] == '-' && label[3] == '-':
			// RFC 5891 §4.2.3.1 reserves "--" in the third and fourth
			// positions for IDNA encodings; only xn-- is one.
			if (label[0]|0x20) != 'x' || (label[1]|0x20) != 'n' {
				return upper, false, ErrDomain
			}
			needIDNA = true
		}
		start = i + 1
	}
	if len(d) > maxDomain {
		return upper, needIDNA, ErrDomainTooLong
	}
	if dots == 0 {
		return upper, needIDNA, ErrDotlessDomain
	}
	if byteClass[d[len(d)-1]]&cAlpha == 0 {
		return upper, needIDNA, ErrNumericTLD
	}
	return upper, needIDNA, nil
}
