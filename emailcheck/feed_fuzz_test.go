package emailcheck

import (
	"strings"
	"testing"
)

// FuzzDisposableFeedList runs arbitrary bytes through the check a new
// disposable list must pass: it never panics, and a list it takes holds
// only normalized domains that are no public suffix, at least MinDomains.
func FuzzDisposableFeedList(f *testing.F) {
	for _, s := range []string{"burner.io\n", "# c\n\nBurner.IO\r\nbücher.de\n", "co.uk\n", "<html>\n", "a..b\n",
		strings.Repeat("x", 70) + ".com\n", "x.com\x00\n", "\xff\xfe\n", ""} {
		f.Add([]byte(s))
	}
	feed, err := NewDisposableFeed("/dev/null", &FeedConfig{MinDomains: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		list, err := feed.verify(body)
		if err != nil {
			return
		}
		if len(list.domains) < 1 {
			t.Fatalf("took a list of %d domains", len(list.domains))
		}
		for d := range list.domains {
			if n, err := normalizeListDomain(d); err != nil || n != d {
				t.Fatalf("took %q, which normalizes to %q, %v", d, n, err)
			}
		}
	})
}

// FuzzKeySlip checks that a slip is never the word itself, that it is one
// edit away, and that swapping is symmetric.
func FuzzKeySlip(f *testing.F) {
	for _, p := range [][2]string{{"con", "com"}, {"cmo", "com"}, {"om", "com"}, {"comm", "com"}, {"con.ar", "com.ar"}, {"", "a"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, typed, want string) {
		if len(typed) > 64 || len(want) > 64 {
			return
		}
		if !keySlip(typed, want) {
			return
		}
		if typed == want {
			t.Fatalf("keySlip(%q, %q): the same word", typed, want)
		}
		if d := osaDistance(typed, want, 1); d != 1 {
			t.Fatalf("keySlip(%q, %q) at distance %d", typed, want, d)
		}
		if len(typed) == len(want) && !keySlip(want, typed) {
			t.Fatalf("keySlip(%q, %q) but not the other way", typed, want)
		}
	})
}
