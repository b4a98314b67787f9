package emailcheck_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/validmail/validmail/emailcheck"
)

// Option sets the corpus checks use.
var (
	optDefault = emailcheck.SyntaxOptions{}
	optQuoted  = emailcheck.SyntaxOptions{AllowQuotedLocal: true}
	optLiteral = emailcheck.SyntaxOptions{AllowAddressLiteral: true}
	optASCII   = emailcheck.SyntaxOptions{ASCIILocalOnly: true}
	optAll     = emailcheck.SyntaxOptions{AllowQuotedLocal: true, AllowAddressLiteral: true}
)

// verdict is one row of testdata/syntax_verdicts.jsonl.
type verdict struct {
	Address  string `json:"address"`
	Corpus   string `json:"corpus"`
	Proposed string `json:"proposed"`
	Rule     string `json:"rule"`
}

// check is one expectation: with opts, the address is accepted or not.
type check struct {
	opts   emailcheck.SyntaxOptions
	accept bool
}

func accepts(o emailcheck.SyntaxOptions) check { return check{o, true} }
func rejects(o emailcheck.SyntaxOptions) check { return check{o, false} }

// corpusException overrides the proposed verdict of one address. Each entry
// says why ParseAddress deliberately answers otherwise.
type corpusException struct {
	why    string
	checks []check
}

var corpusExceptions = map[string]corpusException{
	// Special-use names are valid syntax; the validator reports them as
	// INVALID after parsing (the corpus marks the address as a whole).
	"me@anything.arpa":        {"special-use name: valid syntax, rejected by the validator", []check{accepts(optDefault)}},
	"me@valid.invalid":        {"special-use name: valid syntax, rejected by the validator", []check{accepts(optDefault)}},
	"me@link.local":           {"special-use name: valid syntax, rejected by the validator", []check{accepts(optDefault)}},
	"me@host.localhost":       {"special-use name: valid syntax, rejected by the validator", []check{accepts(optDefault)}},
	"me@onion.onion.onion":    {"special-use name: valid syntax, rejected by the validator", []check{accepts(optDefault)}},
	"me@test.test.test":       {"special-use name: valid syntax, rejected by the validator", []check{accepts(optDefault)}},
	"anything@mycompany.test": {"special-use name: valid syntax, rejected by the validator", []check{accepts(optDefault)}},
	// xn--example is not an A-label: its punycode decodes to "Ωίθηδ", which
	// is not in IDNA-valid form (upper-case Omega), so no such domain can be
	// registered or looked up as a Unicode name.
	"test@xn--example.com": {"invalid A-label", []check{rejects(optDefault), rejects(optAll)}},
	// U+0192 (Latin small f with hook) is a letter, valid in IDNA2008 and
	// UTS #46; the source rejects it for reasons outside syntax.
	"example@symfƒony.com": {"valid IDNA2008 letter", []check{accepts(optDefault)}},
	// No top-level domain ends in a digit: ICANN requires letters (or an
	// xn-- label, all of which end in a letter), so these cannot deliver.
	"test@123.123.123.x123": {"TLD ends in a digit", []check{rejects(optDefault), rejects(optAll)}},
	"x@x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x23456789.x2": {
		"TLD ends in a digit", []check{rejects(optDefault), rejects(optAll)}},
	// The source tests these with literals off; elsewhere in the corpus the
	// same addresses are option:literal rows.
	"me@[127.0.0.1]": {"literal: option", []check{rejects(optDefault), accepts(optLiteral)}},
	"me@[IPv6:::1]":  {"literal: option", []check{rejects(optDefault), accepts(optLiteral)}},
	// A spoof-check test of a bare string with no @: not an address.
	"Кириллицаlatin漢字ひらがなカタカナ": {"no @ sign", []check{rejects(optDefault), rejects(optAll)}},
	// Typographic quotes are UTF8-non-ascii (RFC 6532) in a local part; the
	// source meant ASCII quotes, which typography replaced.
	"just\u201dnot\u201dright@example.com": {"RFC 6532 local part", []check{accepts(optDefault), rejects(optASCII)}},
	// A quoted local part is off by default, Unicode or not; with quoting on,
	// RFC 6531 allows UTF-8 inside the quotes unless ASCIILocalOnly.
	`"quoted.with..unicode.λ"@example.com`: {"quoted local part needs AllowQuotedLocal", []check{
		rejects(optDefault), accepts(optQuoted),
		rejects(emailcheck.SyntaxOptions{AllowQuotedLocal: true, ASCIILocalOnly: true}),
	}},
	// The domain "test" has no dot: rejected whatever the local part.
	"λambdaツ@test": {"dotless domain", []check{rejects(optDefault), rejects(optAll)}},
}

// disputedRule is our decision for the rows the corpus marks "disputed",
// by rule; ParseAddress's doc comment states each one.
type disputedRule struct {
	prefix string
	checks func(address string) []check
}

var disputedRules = []disputedRule{
	// An empty quoted string names no mailbox: rejected even with quoting on.
	{"R-EMPTYQS", func(string) []check { return []check{rejects(optDefault), rejects(optAll)} }},
	// "::" for a single zero group: accepted in an IPv6 literal (RFC 4291
	// text form) when literals are on.
	{"R-IPV6-1GROUP", func(string) []check { return []check{rejects(optDefault), accepts(optLiteral)} }},
	// Domains UTS #46 lookup accepts but IDNA2008 rejects (emoji, symbols)
	// are rejected, like unassigned code points: registries follow IDNA2008.
	{"R-IDNA2008-vs-UTS46", func(string) []check { return []check{rejects(optDefault), rejects(optAll)} }},
	// Symbols and emoji in a local part are UTF8-non-ascii (RFC 6532):
	// accepted unless ASCIILocalOnly.
	{"R-EAI-CHARSET", func(string) []check { return []check{accepts(optDefault), rejects(optASCII)} }},
}

// expectations returns the checks for one corpus row, and whether they come
// from the exception table.
func expectations(v verdict) ([]check, bool, error) {
	if e, ok := corpusExceptions[v.Address]; ok {
		return e.checks, true, nil
	}
	switch v.Proposed {
	case "ok", "ok+dns":
		return []check{accepts(optDefault), accepts(optAll)}, false, nil
	case "not_ok":
		return []check{rejects(optDefault), rejects(optAll)}, false, nil
	case "option:quoted":
		return []check{rejects(optDefault), accepts(optQuoted)}, false, nil
	case "option:literal":
		return []check{rejects(optDefault), accepts(optLiteral)}, false, nil
	case "option:smtputf8":
		return []check{accepts(optDefault), rejects(optASCII)}, false, nil
	case "disputed":
		for _, d := range disputedRules {
			if strings.HasPrefix(v.Rule, d.prefix) {
				return d.checks(v.Address), false, nil
			}
		}
		return nil, false, fmt.Errorf("no decision for disputed rule %q", v.Rule)
	}
	return nil, false, fmt.Errorf("unknown verdict %q", v.Proposed)
}

func readVerdicts(t testing.TB, path string) []verdict {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []verdict
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var v verdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		rows = append(rows, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", path)
	}
	return rows
}

func checkCorpus(t *testing.T, path string) {
	rows := readVerdicts(t, path)
	agree, excepted := 0, 0
	for _, v := range rows {
		checks, exception, err := expectations(v)
		if err != nil {
			t.Errorf("%s %q: %v", v.Corpus, v.Address, err)
			continue
		}
		ok := true
		for _, c := range checks {
			_, err := emailcheck.ParseAddress(v.Address, c.opts)
			if got := err == nil; got != c.accept {
				ok = false
				t.Errorf("%s %q (%s, %s) with %+v: accepted=%v, want %v (err: %v)",
					v.Corpus, v.Address, v.Proposed, v.Rule, c.opts, got, c.accept, err)
			}
			if err != nil && !errors.Is(err, emailcheck.ErrSyntax) {
				t.Errorf("%q: error %v does not match ErrSyntax", v.Address, err)
			}
		}
		if ok && exception {
			excepted++
		} else if ok {
			agree++
		}
	}
	t.Logf("%s: %d of %d rows agree with the proposed verdict, %d more follow the exception table",
		path, agree, len(rows), excepted)
}

func TestParseAddressCorpus(t *testing.T) {
	t.Parallel()
	checkCorpus(t, "testdata/syntax_verdicts.jsonl")
}

// TestParseAddressFullCorpus runs the same checks on the full corpus, which
// includes sources whose license does not allow us to ship them.
func TestParseAddressFullCorpus(t *testing.T) {
	t.Parallel()
	const path = "../../shared/data/corpora/syntax_verdicts.jsonl"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("full corpus not available at %s", path)
	}
	checkCorpus(t, path)
}

func optionFlags(o emailcheck.SyntaxOptions) uint8 {
	var f uint8
	if o.AllowQuotedLocal {
		f |= 1
	}
	if o.AllowAddressLiteral {
		f |= 2
	}
	if o.ASCIILocalOnly {
		f |= 4
	}
	return f
}

var (
	local64  = strings.Repeat("a", 64)
	label63  = strings.Repeat("b", 63)
	label33u = strings.Repeat("c", 33) + "ü" // 35 octets, 42 as an A-label
)

type acceptCase struct {
	name  string
	in    string
	opts  emailcheck.SyntaxOptions
	ascii string // want ASCIIDomain
}

var acceptCases = []acceptCase{
	{"typical", "john.doe@example.com", optDefault, "example.com"},
	// Letters and combining marks of every script stay accepted: only
	// invisible and unassigned characters are refused.
	{"Devanagari with combining marks", "\u0905\u0928\u093f\u0932@example.com", optDefault, "example.com"},
	{"Arabic letters", "\u0645\u062d\u0645\u062f@example.com", optDefault, "example.com"},
	{"Hebrew with a point", "\u05e9\u05b8\u05dc\u05d5\u05b9\u05dd@example.com", optDefault, "example.com"},
	{"Thai with a tone mark", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35@example.com", optDefault, "example.com"},
	{"Latin with a combining acute", "jose\u0301@example.com", optDefault, "example.com"},
	{"Han characters", "\u7528\u6237@example.com", optDefault, "example.com"},
	{"upper case folded in ASCIIDomain only", "John.Doe@Example.COM", optDefault, "example.com"},
	{"sub-address and subdomains", "user+tag@mail.example.co.uk", optDefault, "mail.example.co.uk"},
	{"every atext character", "!#$%&'*+-/=?^_`{|}~@example.com", optDefault, "example.com"},
	{"shortest", "a@b.co", optDefault, "b.co"},
	{"single-letter TLD", "a@b.c", optDefault, "b.c"},
	{"numeric labels before the TLD", "x@123.example.com", optDefault, "123.example.com"},
	{"TLD ending in a letter", "x@example.c0m", optDefault, "example.c0m"},
	{"hyphens inside labels", "x@a-b.c-d.com", optDefault, "a-b.c-d.com"},
	{"local part of 64 octets", local64 + "@example.com", optDefault, "example.com"},
	{"label of 63 octets", "x@" + label63 + ".com", optDefault, label63 + ".com"},
	{"address of 254 octets", local64 + "@" + label63 + "." + label63 + "." + strings.Repeat("d", 57) + ".com",
		optDefault, label63 + "." + label63 + "." + strings.Repeat("d", 57) + ".com"},
	{"U-label domain", "x@bücher.de", optDefault, "xn--bcher-kva.de"},
	{"U-label domain in upper case", "x@BÜCHER.DE", optDefault, "xn--bcher-kva.de"},
	{"A-label domain", "x@xn--bcher-kva.de", optDefault, "xn--bcher-kva.de"},
	{"A-label in upper case", "x@XN--BCHER-KVA.DE", optDefault, "xn--bcher-kva.de"},
	{"xn-- TLD", "x@example.xn--p1ai", optDefault, "example.xn--p1ai"},
	{"Unicode TLD", "x@пример.рф", optDefault, "xn--e1afmkfd.xn--p1ai"},
	{"ideographic full stop", "x@example\u3002com", optDefault, "example.com"},
	{"fullwidth letters", "x@ＥＸＡＭＰＬＥ.com", optDefault, "example.com"},
	{"non-ASCII local part", "ñoñó@example.com", optDefault, "example.com"},
	{"non-ASCII address", "伊昭傑@郵件.商務", optDefault, "xn--5nqv22n.xn--lhr59c"},
	{"symbol in local part (RFC 6532)", "examp\u2551le@example.com", optDefault, "example.com"},
	{"non-ASCII local part with ASCIILocalOnly off and quoting on", "δοκιμή@example.com", optQuoted, "example.com"},
	{"special-use TLD", "me@test.invalid", optDefault, "test.invalid"},
	{"reserved domain", "me@example.com", optDefault, "example.com"},
	{"localhost subdomain", "me@x.localhost", optDefault, "x.localhost"},
	{"quoted local part", `"john doe"@example.com`, optQuoted, "example.com"},
	{"quoted @, split at the last @", `"a@b"@example.com`, optQuoted, "example.com"},
	{"quoted-pairs", `"a\"b\\c"@example.com`, optQuoted, "example.com"},
	{"quoted dots", `"a..b."@example.com`, optQuoted, "example.com"},
	{"quoted Unicode (RFC 6531)", `"λ x"@example.com`, optQuoted, "example.com"},
	{"IPv4 literal", "a@[192.0.2.1]", optLiteral, "[192.0.2.1]"},
	{"IPv6 literal", "a@[IPv6:2001:db8::1]", optLiteral, "[IPv6:2001:db8::1]"},
	{"IPv6 tag in lower case", "a@[ipv6:::1]", optLiteral, "[ipv6:::1]"},
	{"IPv6 literal with IPv4 tail", "a@[IPv6:::ffff:192.0.2.1]", optLiteral, "[IPv6:::ffff:192.0.2.1]"},
	{"IPv6 :: for one group (disputed: accepted)", "a@[IPv6:1:2:3:4:5:6::8]", optLiteral, "[IPv6:1:2:3:4:5:6::8]"},
}

func TestParseAddressAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range acceptCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := emailcheck.ParseAddress(tc.in, tc.opts)
			if err != nil {
				t.Fatalf("ParseAddress(%q, %+v): %v", tc.in, tc.opts, err)
			}
			at := strings.LastIndexByte(tc.in, '@')
			want := emailcheck.Address{Local: tc.in[:at], Domain: tc.in[at+1:], ASCIIDomain: tc.ascii,
				IsLiteral: strings.HasPrefix(tc.ascii, "[")}
			if a != want {
				t.Fatalf("ParseAddress(%q) = %+v, want %+v", tc.in, a, want)
			}
		})
	}
}

type rejectCase struct {
	name string
	in   string
	opts emailcheck.SyntaxOptions
	want error
}

var rejectCases = []rejectCase{
	{"empty", "", optAll, emailcheck.ErrEmpty},
	{"255 octets", local64 + "@" + label63 + "." + label63 + "." + strings.Repeat("d", 58) + ".com", optDefault, emailcheck.ErrTooLong},
	{"over 254 octets with the A-label domain", local64 + "@" + strings.Repeat(label33u+".", 5) + "com", optDefault, emailcheck.ErrTooLong},
	{"no @", "john.example.com", optAll, emailcheck.ErrNoAt},
	{"quoted without @", `"john"`, optQuoted, emailcheck.ErrNoAt},
	{"two @", "a@b@example.com", optAll, emailcheck.ErrMultipleAt},
	{"@ in quotes when quoting is off", `"a@b"@example.com`, optDefault, emailcheck.ErrMultipleAt},
	{"empty local part", "@example.com", optAll, emailcheck.ErrEmptyLocal},
	{"empty quoted string (disputed: rejected)", `""@example.com`, optQuoted, emailcheck.ErrEmptyLocal},
	{"local part of 65 octets (disputed: rejected)", local64 + "a@example.com", optAll, emailcheck.ErrLocalTooLong},
	{"quoted local part of 65 octets", `"` + local64[:62] + ` "@example.com`, optQuoted, emailcheck.ErrLocalTooLong},
	{"local part over 64 octets in NFC", strings.Repeat("\uFB2C", 21) + "@example.com", optDefault, emailcheck.ErrLocalTooLong},
	{"leading dot", ".a@example.com", optAll, emailcheck.ErrLocalPart},
	{"trailing dot", "a.@example.com", optAll, emailcheck.ErrLocalPart},
	{"double dot", "a..b@example.com", optAll, emailcheck.ErrLocalPart},
	{"comma", "a,b@example.com", optAll, emailcheck.ErrLocalPart},
	{"backslash outside quotes", `a\b@example.com`, optAll, emailcheck.ErrLocalPart},
	{"U+037E normalizes to ';'", "me.\u037e@example.com", optDefault, emailcheck.ErrLocalPart},
	{"non-ASCII local part with ASCIILocalOnly", "ñ@example.com", optASCII, emailcheck.ErrNonASCIILocal},
	{"non-ASCII quoted local part with ASCIILocalOnly", `"ñ"@example.com`,
		emailcheck.SyntaxOptions{AllowQuotedLocal: true, ASCIILocalOnly: true}, emailcheck.ErrNonASCIILocal},
	{"quoted local part by default", `"a"@example.com`, optDefault, emailcheck.ErrQuoted},
	{"text after the quotes", `"a"b@example.com`, optQuoted, emailcheck.ErrQuoted},
	{"escaped closing quote", `"a\"@example.com`, optQuoted, emailcheck.ErrQuoted},
	{"bare quote inside", `"a"b"@example.com`, optQuoted, emailcheck.ErrQuoted},
	{"quoted no-break space", "\"a\u00a0\"@example.com", optQuoted, emailcheck.ErrQuoted},
	{"tab in quotes", "\"a\tb\"@example.com", optQuoted, emailcheck.ErrWhitespace},
	{"CR in quotes", "\"a\rb\"@example.com", optQuoted, emailcheck.ErrWhitespace},
	{"empty domain", "a@", optAll, emailcheck.ErrDomain},
	{"leading dot in domain", "a@.example.com", optAll, emailcheck.ErrDomain},
	{"empty label", "a@example..com", optAll, emailcheck.ErrDomain},
	{"leading hyphen", "a@-example.com", optAll, emailcheck.ErrDomain},
	{"trailing hyphen", "a@example-.com", optAll, emailcheck.ErrDomain},
	{"hyphens in positions 3 and 4", "me@yy--0.tld", optAll, emailcheck.ErrDomain},
	{"underscore", "a@ex_ample.com", optAll, emailcheck.ErrDomain},
	{"symbol in domain", "a@ex*ample.com", optAll, emailcheck.ErrDomain},
	{"ASCII symbol in a Unicode domain", "a@bü_cher.de", optAll, emailcheck.ErrDomain},
	{"dotless", "a@localhost", optAll, emailcheck.ErrDotlessDomain},
	{"dotless Unicode", "a@bücher", optAll, emailcheck.ErrDotlessDomain},
	{"trailing dot", "a@example.com.", optAll, emailcheck.ErrTrailingDot},
	{"trailing dot, Unicode", "a@bücher.de.", optAll, emailcheck.ErrTrailingDot},
	{"trailing ideographic full stop", "a@bücher.de\u3002", optAll, emailcheck.ErrTrailingDot},
	{"bare IPv4", "a@192.0.2.1", optAll, emailcheck.ErrNumericTLD},
	{"numeric TLD", "a@example.123", optAll, emailcheck.ErrNumericTLD},
	{"TLD ending in a digit", "a@example.x123", optAll, emailcheck.ErrNumericTLD},
	{"label of 64 octets", "a@" + label63 + "b.com", optAll, emailcheck.ErrLabelTooLong},
	{"A-label over 63 octets", "a@" + strings.Repeat("c", 57) + "ü.com", optAll, emailcheck.ErrLabelTooLong},
	{"domain over 253 octets as A-labels", "a@" + strings.Repeat(label33u+".", 6) + "com", optAll, emailcheck.ErrDomainTooLong},
	{"invalid A-label", "a@xn--example.com", optAll, emailcheck.ErrIDN},
	{"undecodable A-label", "a@xn--a.com", optAll, emailcheck.ErrIDN},
	{"hyphens in a Unicode domain", "a@ab--c.bücher.de", optAll, emailcheck.ErrDomain},
	{"emoji domain (disputed: rejected)", "a@😆.org", optAll, emailcheck.ErrIDN},
	{"symbol in a Unicode domain", "a@email€a.com", optAll, emailcheck.ErrIDN},
	{"IDNA2008-disallowed punctuation", "a@email\u00a1a.com", optAll, emailcheck.ErrIDN},
	{"unassigned code point", "a@\U000E0080x.com", optAll, emailcheck.ErrInvisible},
	// Invisible characters make an address look like another one.
	{"zero-width space in local part", "john\u200bdoe@gmail.com", optAll, emailcheck.ErrInvisible},
	{"zero-width joiner in local part", "jo\u200dhn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"zero-width non-joiner in local part", "jo\u200chn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"soft hyphen in local part", "jo\u00adhn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"right-to-left override in local part", "john\u202e@gmail.com", optAll, emailcheck.ErrInvisible},
	{"left-to-right mark in local part", "\u200ejohn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"byte-order mark in local part", "\ufeffjohn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"word joiner in local part", "jo\u2060hn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"Mongolian vowel separator in local part", "jo\u180ehn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"tag character in local part", "john\U000E0041@gmail.com", optAll, emailcheck.ErrInvisible},
	{"private-use character in local part", "jo\ue000hn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"supplementary private use in local part", "jo\U000F0000hn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"unassigned code point in local part", "jo\U0003FFFDhn@gmail.com", optAll, emailcheck.ErrInvisible},
	{"soft hyphen in domain", "john@gm\u00adail.com", optAll, emailcheck.ErrInvisible},
	{"zero-width space in domain", "john@gmail\u200b.com", optAll, emailcheck.ErrInvisible},
	{"zero-width joiner in a Unicode domain", "john@bü\u200dcher.de", optAll, emailcheck.ErrInvisible},
	{"byte-order mark in domain", "john@\ufeffgmail.com", optAll, emailcheck.ErrInvisible},
	{"private use in domain", "john@gm\ue000ail.com", optAll, emailcheck.ErrInvisible},
	{"literal by default", "a@[192.0.2.1]", optDefault, emailcheck.ErrLiteral},
	{"IPv4 out of range", "a@[192.0.2.256]", optLiteral, emailcheck.ErrLiteral},
	{"IPv4 leading zero", "a@[01.2.3.4]", optLiteral, emailcheck.ErrLiteral},
	{"IPv6 without tag", "a@[::1]", optLiteral, emailcheck.ErrLiteral},
	{"IPv4 with IPv6 tag", "a@[IPv6:192.0.2.1]", optLiteral, emailcheck.ErrLiteral},
	{"IPv6 zone", "a@[IPv6:fe80::1%eth0]", optLiteral, emailcheck.ErrLiteral},
	{"two ::", "a@[IPv6:1::2::3]", optLiteral, emailcheck.ErrLiteral},
	{"nine groups", "a@[IPv6:1:2:3:4:5:6:7:8::]", optLiteral, emailcheck.ErrLiteral},
	{"general literal", "a@[tag:content]", optLiteral, emailcheck.ErrLiteral},
	{"unclosed literal", "a@[192.0.2.1", optLiteral, emailcheck.ErrLiteral},
	{"leading space", " a@example.com", optAll, emailcheck.ErrWhitespace},
	{"trailing space", "a@example.com ", optAll, emailcheck.ErrWhitespace},
	{"folding white space", "a@example.com\r\n ", optAll, emailcheck.ErrWhitespace},
	{"inner space", "a b@example.com", optAll, emailcheck.ErrWhitespace},
	{"no-break space", "a\u00a0b@example.com", optAll, emailcheck.ErrWhitespace},
	{"line separator", "a\u2028@example.com", optAll, emailcheck.ErrWhitespace},
	{"ideographic space in domain", "a@bü\u3000cher.de", optAll, emailcheck.ErrWhitespace},
	{"NUL", "a\x00@example.com", optAll, emailcheck.ErrControl},
	{"DEL", "a\x7f@example.com", optAll, emailcheck.ErrControl},
	{"C1 control", "a\u0085@example.com", optAll, emailcheck.ErrControl},
	{"control in domain", "a@exa\x01mple.com", optAll, emailcheck.ErrControl},
	{"C1 control in a Unicode domain", "a@bü\u0085cher.de", optAll, emailcheck.ErrControl},
	{"invalid UTF-8 in local part", "a\xff@example.com", optAll, emailcheck.ErrInvalidUTF8},
	{"invalid UTF-8 in domain", "a@exa\xffmple.com", optAll, emailcheck.ErrInvalidUTF8},
	{"replacement character", "\ufffd@example.com", optAll, emailcheck.ErrInvalidUTF8},
	{"comment in local part", "(c)a@example.com", optAll, emailcheck.ErrComment},
	{"comment in domain", "a@example(c).com", optAll, emailcheck.ErrComment},
	{"display name", "John Doe <john@example.com>", optAll, emailcheck.ErrDisplayName},
	{"angle brackets", "<john@example.com>", optAll, emailcheck.ErrDisplayName},
}

func TestParseAddressRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range rejectCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := emailcheck.ParseAddress(tc.in, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseAddress(%q, %+v) = %+v, %v; want %v", tc.in, tc.opts, a, err, tc.want)
			}
			if !errors.Is(err, emailcheck.ErrSyntax) {
				t.Fatalf("%v does not match ErrSyntax", err)
			}
			if a != (emailcheck.Address{}) {
				t.Fatalf("rejected with a non-zero Address %+v", a)
			}
		})
	}
}

func TestReasonErrors(t *testing.T) {
	t.Parallel()
	reasons := []error{
		emailcheck.ErrEmpty, emailcheck.ErrTooLong, emailcheck.ErrNoAt, emailcheck.ErrMultipleAt,
		emailcheck.ErrEmptyLocal, emailcheck.ErrLocalTooLong, emailcheck.ErrLocalPart,
		emailcheck.ErrNonASCIILocal, emailcheck.ErrQuoted, emailcheck.ErrDomain,
		emailcheck.ErrDotlessDomain, emailcheck.ErrTrailingDot, emailcheck.ErrNumericTLD,
		emailcheck.ErrLabelTooLong, emailcheck.ErrDomainTooLong, emailcheck.ErrIDN,
		emailcheck.ErrLiteral, emailcheck.ErrWhitespace, emailcheck.ErrControl,
		emailcheck.ErrInvalidUTF8, emailcheck.ErrComment, emailcheck.ErrDisplayName,
	}
	tested := map[error]bool{}
	for _, tc := range rejectCases {
		tested[tc.want] = true
	}
	msgs := map[string]bool{}
	for _, r := range reasons {
		if !errors.Is(r, emailcheck.ErrSyntax) {
			t.Errorf("%v does not wrap ErrSyntax", r)
		}
		if !strings.HasPrefix(r.Error(), "emailcheck: invalid syntax: ") {
			t.Errorf("%q lacks the package prefix", r.Error())
		}
		if msgs[r.Error()] {
			t.Errorf("duplicate message %q", r.Error())
		}
		msgs[r.Error()] = true
		if !tested[r] {
			t.Errorf("no reject case for %v", r)
		}
	}
}

func TestParseAddressAllocs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"john.doe@example.com", 0},
		{"John.Doe@Example.com", 1}, // the lower-case ASCIIDomain
		{"john.doe@example", 0},
		{"John Doe <john.doe@example.com>", 0},
		{"john.doe@exa\xffmple.com", 0},
	} {
		got := testing.AllocsPerRun(100, func() { _, _ = emailcheck.ParseAddress(tc.in, optDefault) })
		if got > tc.want {
			t.Errorf("ParseAddress(%q): %v allocations, want at most %v", tc.in, got, tc.want)
		}
	}
}

func BenchmarkParseAddress(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"typical", "john.doe@example.com"},
		{"upper", "John.Doe@Example.COM"},
		{"idn", "josé@bücher.de"},
		{"reject", "john.doe@example"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = emailcheck.ParseAddress(bc.in, optDefault)
			}
		})
	}
}

func ExampleParseAddress() {
	a, err := emailcheck.ParseAddress("José.Silva@Bücher.DE", emailcheck.SyntaxOptions{})
	fmt.Println(a.Local, a.Domain, a.ASCIIDomain, err)

	_, err = emailcheck.ParseAddress("John Doe <john@example.com>", emailcheck.SyntaxOptions{})
	fmt.Println(errors.Is(err, emailcheck.ErrSyntax), errors.Is(err, emailcheck.ErrDisplayName))

	_, err = emailcheck.ParseAddress("user@[192.0.2.1]", emailcheck.SyntaxOptions{})
	fmt.Println(err)
	a, _ = emailcheck.ParseAddress("user@[192.0.2.1]", emailcheck.SyntaxOptions{AllowAddressLiteral: true})
	fmt.Println(a.ASCIIDomain, a.IsLiteral)
	// Output:
	// José.Silva Bücher.DE xn--bcher-kva.de <nil>
	// true true
	// emailcheck: invalid syntax: address literal not allowed or malformed
	// [192.0.2.1] true
}
