package emailcheck_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/validmail/validmail/emailcheck"
)

func fuzzOptions(flags uint8) emailcheck.SyntaxOptions {
	return emailcheck.SyntaxOptions{
		AllowQuotedLocal:    flags&1 != 0,
		AllowAddressLiteral: flags&2 != 0,
		ASCIILocalOnly:      flags&4 != 0,
	}
}

func FuzzParseAddress(f *testing.F) {
	for _, v := range readVerdicts(f, "testdata/syntax_verdicts.jsonl") {
		f.Add(v.Address, uint8(0))
		f.Add(v.Address, uint8(3))
	}
	for _, tc := range acceptCases {
		f.Add(tc.in, optionFlags(tc.opts))
	}
	for _, tc := range rejectCases {
		f.Add(tc.in, optionFlags(tc.opts))
	}
	f.Fuzz(func(t *testing.T, s string, flags uint8) {
		opts := fuzzOptions(flags)
		a, err := emailcheck.ParseAddress(s, opts)
		if err != nil {
			if !errors.Is(err, emailcheck.ErrSyntax) {
				t.Fatalf("%q: error %v does not match ErrSyntax", s, err)
			}
			if a != (emailcheck.Address{}) {
				t.Fatalf("%q: rejected with a non-zero Address %+v", s, a)
			}
			return
		}
		if len(s) > 254 || len(a.Local) > 64 || len(a.ASCIIDomain) > 253 {
			t.Fatalf("%q: accepted over a length limit: %+v", s, a)
		}
		if a.Local+"@"+a.Domain != s {
			t.Fatalf("%q: Local+@+Domain = %q", s, a.Local+"@"+a.Domain)
		}
		// Nothing invisible or unassigned gets through: it would make the
		// address look like another one.
		for _, r := range s {
			if unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs) ||
				!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc) {
				t.Fatalf("%q: accepted with the invisible or unassigned character %U", s, r)
			}
		}
		if a.IsLiteral {
			if a.ASCIIDomain != a.Domain {
				t.Fatalf("%q: literal ASCIIDomain %q differs from Domain", s, a.ASCIIDomain)
			}
		} else {
			for i := 0; i < len(a.ASCIIDomain); i++ {
				if c := a.ASCIIDomain[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
					t.Fatalf("%q: ASCIIDomain %q not lower-case ASCII", s, a.ASCIIDomain)
				}
			}
			if strings.HasSuffix(a.ASCIIDomain, ".") {
				t.Fatalf("%q: ASCIIDomain %q ends with a dot", s, a.ASCIIDomain)
			}
		}
		b, err := emailcheck.ParseAddress(a.Local+"@"+a.ASCIIDomain, opts)
		if err != nil {
			t.Fatalf("%q: re-parsing %q: %v", s, a.Local+"@"+a.ASCIIDomain, err)
		}
		if b.ASCIIDomain != a.ASCIIDomain {
			t.Fatalf("%q: re-parsing gives ASCIIDomain %q, want %q", s, b.ASCIIDomain, a.ASCIIDomain)
		}
	})
}
