package emailcheck

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

func defaultSuggester(t testing.TB) *suggester {
	t.Helper()
	return newSuggester(defaultClassifier(t))
}

// readTSV returns the tab-separated rows of a testdata file, without
// comments.
func readTSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && line[0] != '#' {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

// TestSuggestCorpus checks every typo of testdata/typos.tsv gets its
// expected suggestion and no real domain of testdata/not_typos.tsv gets
// one, and reports precision and recall (go test -v -run SuggestCorpus).
func TestSuggestCorpus(t *testing.T) {
	t.Parallel()
	s := defaultSuggester(t)
	typos := readTSV(t, "testdata/typos.tsv")
	real := readTSV(t, "testdata/not_typos.tsv")
	if len(typos) < 200 || len(real) < 200 {
		t.Fatalf("corpus too small: %d typos, %d real domains", len(typos), len(real))
	}
	right, wrong, missed := 0, 0, 0
	for _, r := range typos {
		got := s.suggest(r[0], r[2] == "yes")
		switch got {
		case r[1]:
			right++
		case "":
			missed++
			t.Errorf("%s (%s, mail %s): no suggestion, want %s", r[0], r[3], r[2], r[1])
		default:
			wrong++
			t.Errorf("%s (%s, mail %s): suggested %s, want %s", r[0], r[3], r[2], got, r[1])
		}
	}
	for _, r := range real {
		if got := s.suggest(r[0], true); got != "" {
			wrong++
			t.Errorf("%s (%s): suggested %s, want none", r[0], r[1], got)
		}
	}
	precision := float64(right) / float64(max(1, right+wrong))
	recall := float64(right) / float64(len(typos))
	t.Logf("typo corpus: %d typos, %d real domains: %d right, %d wrong, %d missed; precision %.3f, recall %.3f",
		len(typos), len(real), right, wrong, missed, precision, recall)
}

func TestSuggestRules(t *testing.T) {
	t.Parallel()
	s := defaultSuggester(t)
	tests := []struct {
		domain   string
		receives bool
		want     string
	}{
		{"gmial.com", true, "gmail.com"},                // typosquat with a mail server
		{"gmial.com", false, "gmail.com"},               // NXDOMAIN
		{"gmail.con", false, "gmail.com"},               // broken TLD
		{"acme-widgets.con", false, "acme-widgets.com"}, // broken TLD on any domain
		{"acme-widgets.con", true, "acme-widgets.com"},
		{"example-shop.ogr", false, "example-shop.org"},
		{"gmial.con", false, "gmail.com"}, // both at once
		{"hotmial.com", false, "hotmail.com"},
		{"yaho.com", false, "yahoo.com"},         // a typo listed in the free list
		{"qx.co", false, ""},                     // short: two edits would reach anything
		{"qq.co", false, "qq.com"},               // short, one edit
		{"gmaiil.co", true, ""},                  // two edits, and it receives mail
		{"hotmial.co.uk", true, "hotmail.co.uk"}, // one transposition from a top provider
		{"hotmial.co.ukk", true, ""},             // two edits from a top provider
		{"acme-corp.com", true, ""},              // a domain like any other
		{"acme-corp.com", false, ""},             // nothing popular nearby
		{"gmail.com", false, ""},                 // never the domain itself
		{"me.com", false, ""},
		{"mail.com", true, ""},
		{"max.com", true, ""},      // one edit from mac.com, not a top provider
		{"yahoo.com.br", true, ""}, // a country variant
	}
	for _, tt := range tests {
		if got := s.suggest(tt.domain, tt.receives); got != tt.want {
			t.Errorf("suggest(%q, mail %v) = %q, want %q", tt.domain, tt.receives, got, tt.want)
		}
	}
}

// A domain configured as a real provider is never suggested away from.
func TestSuggestConfiguredReal(t *testing.T) {
	t.Parallel()
	c, err := newClassifier(lists{free: []string{"gmail.co"}})
	if err != nil {
		t.Fatal(err)
	}
	s := newSuggester(c)
	if got := s.suggest("gmail.co", true); got != "" {
		t.Errorf("gmail.co listed as real: suggested %q", got)
	}
	if got := defaultSuggester(t).suggest("gmail.co", true); got != "gmail.com" {
		t.Errorf("gmail.co by default: suggested %q, want gmail.com", got)
	}
}

// Ties are broken by weight, then by name, so the same input always gives
// the same answer.
func TestSuggestDeterministic(t *testing.T) {
	t.Parallel()
	s := defaultSuggester(t)
	// One edit from both hotmail.com (weight 300) and hotmail.co.uk? No:
	// "gmx.ne" is one edit from gmx.net and from gmx.de.
	first := s.suggest("gmx.ne", false)
	if first != "gmx.net" && first != "gmx.de" {
		t.Fatalf("gmx.ne: %q", first)
	}
	for range 100 {
		if got := s.suggest("gmx.ne", false); got != first {
			t.Fatalf("gmx.ne: %q, then %q", first, got)
		}
	}
}

func TestOSADistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		k, d int
	}{
		{"gmail.com", "gmail.com", 2, 0},
		{"gmial.com", "gmail.com", 2, 1}, // one transposition
		{"gmal.com", "gmail.com", 2, 1},
		{"gmaill.com", "gmail.com", 2, 1},
		{"gnail.com", "gmail.com", 2, 1},
		{"ca", "abc", 5, 3}, // OSA, not full Damerau: 3, not 2
		{"hotmail.com", "gmail.com", 5, 3},
		{"hotmail.com", "gmail.com", 1, 2}, // capped at k+1
		{"", "abc", 5, 3},
		{strings.Repeat("a", 100), strings.Repeat("a", 99) + "b", 2, 1}, // beyond the stack buffer
	}
	for _, tt := range tests {
		if got := osaDistance(tt.a, tt.b, tt.k); got != tt.d {
			t.Errorf("osaDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.k, got, tt.d)
		}
	}
}

func FuzzSuggest(f *testing.F) {
	for _, s := range []string{"gmial.com", "gmail.con", "acme.con", "qq.co", "a", ".", "..con", "x.", "gmail.com"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	s := newSuggester(func() *classifier { c, _ := newClassifier(lists{}); return c }())
	f.Fuzz(func(t *testing.T, domain string, receives bool) {
		got := s.suggest(domain, receives)
		if got != "" && got == domain {
			t.Fatalf("suggest(%q) = the input itself", domain)
		}
		if again := s.suggest(domain, receives); again != got {
			t.Fatalf("suggest(%q) = %q, then %q", domain, got, again)
		}
	})
}

// BenchmarkSuggestNone is the common case: a domain that receives mail and
// looks like no popular one.
func BenchmarkSuggestNone(b *testing.B) {
	s := defaultSuggester(b)
	b.ReportAllocs()
	for b.Loop() {
		if s.suggest("acme-widgets.com", true) != "" {
			b.Fatal("suggestion")
		}
	}
}

// BenchmarkSuggestNXDomain searches the whole popular list for a domain
// that does not exist.
func BenchmarkSuggestNXDomain(b *testing.B) {
	s := defaultSuggester(b)
	b.ReportAllocs()
	for b.Loop() {
		if s.suggest("gmial.com", false) != "gmail.com" {
			b.Fatal("no suggestion")
		}
	}
}
