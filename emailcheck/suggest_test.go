package emailcheck

import (
	"bufio"
	"maps"
	"os"
	"slices"
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

// suggestFor runs the suggester as the validator does for a domain whose
// MX hosts are mx: "-" for none (the domain receives no mail), "own" for
// mx1.<domain>, else a comma-separated list of hosts.
func suggestFor(c *classifier, s *suggester, domain, mx string) string {
	if mx == "-" {
		return s.suggest(domain, false)
	}
	hosts := mxHostsOf(domain, mx)
	return s.suggestReceiving(domain, hosts, c.classifyDomain(domain, hosts), parkNone)
}

// mxHostsOf reads the mx column of the testdata files.
func mxHostsOf(domain, mx string) []string {
	if mx == "own" {
		return []string{"mx1." + domain}
	}
	return strings.Split(mx, ",")
}

// expectedMiss marks the typo rows the rules are known to leave alone.
const expectedMiss = "expected miss"

// TestSuggestCorpus checks every typo of testdata/typos.tsv gets its
// expected suggestion and no real domain of testdata/not_typos.tsv gets
// one, and reports precision and recall (go test -v -run SuggestCorpus).
// The corpus was written beside the rules: these are regression figures.
func TestSuggestCorpus(t *testing.T) {
	t.Parallel()
	c := defaultClassifier(t)
	s := newSuggester(c)
	typos := readTSV(t, "testdata/typos.tsv")
	real := readTSV(t, "testdata/not_typos.tsv")
	if len(typos) < 400 || len(real) < 300 {
		t.Fatalf("corpus too small: %d typos, %d real domains", len(typos), len(real))
	}
	tally := newCorpusTally()
	for _, r := range typos {
		if len(r) != 4 {
			t.Fatalf("typo row %q: %d fields, want 4", r, len(r))
		}
		got := suggestFor(c, s, r[0], r[2])
		class := r[3]
		if i := strings.IndexAny(class, ":,"); i > 0 {
			class = class[:i]
		}
		tally.add(class, r[2], r[1], got)
		switch {
		case got == r[1]:
		case got == "" && strings.HasPrefix(r[3], expectedMiss):
		case got == "":
			t.Errorf("%s (%s, mx %s): no suggestion, want %s", r[0], r[3], r[2], r[1])
		default:
			t.Errorf("%s (%s, mx %s): suggested %s, want %s", r[0], r[3], r[2], got, r[1])
		}
	}
	falsePos := 0
	for _, r := range real {
		if got := suggestFor(c, s, r[0], r[1]); got != "" {
			falsePos++
			t.Errorf("%s (%s, mx %s): suggested %s, want none", r[0], r[2], r[1], got)
		}
	}
	all, withMX := tally.all, tally.withMX
	t.Logf("typo corpus: %d typos, %d real domains: %d right, %d wrong, %d false positives; precision %.3f, recall %.3f",
		all.n, len(real), all.right, all.wrong, falsePos, all.precision(falsePos), all.recall())
	tally.logGroups(t, 40)
	if p := all.precision(falsePos); p < 0.98 {
		t.Errorf("precision %.3f, want at least 0.98", p)
	}
	if r := all.recall(); r < 0.9 {
		t.Errorf("recall %.3f, want at least 0.9", r)
	}
	if r := withMX.recall(); r < 0.8 {
		t.Errorf("recall on typos that receive mail %.3f, want at least 0.8", r)
	}
}

// corpusTally counts the suggestions made for a corpus of typos: over
// all of them, over those whose domain receives mail, and by group.
type corpusTally struct {
	all, withMX tallyCount
	groups      map[string]*tallyCount
}

// tallyCount counts typos, and the right and wrong suggestions among
// them (the rest got none).
type tallyCount struct{ n, right, wrong int }

func newCorpusTally() *corpusTally {
	return &corpusTally{groups: map[string]*tallyCount{}}
}

// add counts the suggestion got for a typo of group whose right one is
// want; mx "-" marks a typo whose domain receives no mail.
func (ct *corpusTally) add(group, mx, want, got string) {
	if ct.groups[group] == nil {
		ct.groups[group] = &tallyCount{}
	}
	counts := []*tallyCount{&ct.all, ct.groups[group]}
	if mx != "-" {
		counts = append(counts, &ct.withMX)
	}
	for _, tc := range counts {
		tc.n++
		switch got {
		case want:
			tc.right++
		case "":
		default:
			tc.wrong++
		}
	}
}

// recall is the share of the typos that got the right suggestion.
func (tc tallyCount) recall() float64 { return float64(tc.right) / float64(max(1, tc.n)) }

// precision is the share of right suggestions among all made, falsePos
// of them to real domains.
func (tc tallyCount) precision(falsePos int) float64 {
	return float64(tc.right) / float64(max(1, tc.right+tc.wrong+falsePos))
}

// logGroups logs the recall on typos that receive mail and by group,
// the group names padded to width.
func (ct *corpusTally) logGroups(t *testing.T, width int) {
	t.Helper()
	t.Logf("typos that receive mail: %d, recall %.3f", ct.withMX.n, ct.withMX.recall())
	for _, name := range slices.Sorted(maps.Keys(ct.groups)) {
		tc := ct.groups[name]
		t.Logf("  %-*s %3d typos, recall %.3f", width, name, tc.n, tc.recall())
	}
}

// TestLegitimateDomains checks that no domain of testdata/not_typos.tsv,
// real providers, ISPs, universities and companies, is corrected or
// reported disposable, with its assumed MX hosts.
func TestLegitimateDomains(t *testing.T) {
	t.Parallel()
	c := defaultClassifier(t)
	s := newSuggester(c)
	real := readTSV(t, "testdata/not_typos.tsv")
	seen := map[string]bool{}
	for _, r := range real {
		if len(r) != 3 {
			t.Fatalf("row %q: %d fields, want 3", r, len(r))
		}
		if seen[r[0]] {
			t.Errorf("%s listed twice", r[0])
		}
		seen[r[0]] = true
		hosts := mxHostsOf(r[0], r[1])
		dc := c.classifyDomain(r[0], hosts)
		if dc.disposable {
			t.Errorf("%s (%s): disposable (%s)", r[0], r[2], dc.reason)
		}
		if got := s.suggestReceiving(r[0], hosts, dc, parkNone); got != "" {
			t.Errorf("%s (%s): suggested %s", r[0], r[2], got)
		}
	}
	if len(seen) < 300 {
		t.Errorf("%d legitimate domains, want at least 300", len(seen))
	}
	for _, d := range []string{"keemail.me", "21cn.com", "cloud.com", "pcloud.com", "ibm.com"} {
		if !seen[d] {
			t.Errorf("%s is not among the legitimate domains", d)
		}
	}
}

// The legitimate domains stay uncorrected even if their mail went to a
// third party's host the rules do not know, the weak sign of a typosquat:
// the rules must not lean on the MX hosts the corpus assumes.
func TestLegitimateDomainsAtStrangersHost(t *testing.T) {
	t.Parallel()
	c := defaultClassifier(t)
	s := newSuggester(c)
	for _, r := range readTSV(t, "testdata/not_typos.tsv") {
		hosts := []string{"mx.catchall-inbox.net"}
		if got := s.suggestReceiving(r[0], hosts, c.classifyDomain(r[0], hosts), parkNone); got != "" {
			t.Errorf("%s (%s) at a stranger's host: suggested %s", r[0], r[2], got)
		}
	}
}

// The legitimate domains stay uncorrected even if their mail went to a
// registrar's default host, as small companies' mail often does: GoDaddy's
// and Namecheap's hosts serve their customers' real mail too.
func TestLegitimateDomainsAtRegistrarHost(t *testing.T) {
	t.Parallel()
	c := defaultClassifier(t)
	s := newSuggester(c)
	for _, h := range []string{"smtp.secureserver.net", "eforward1.registrar-servers.com"} {
		for _, r := range readTSV(t, "testdata/not_typos.tsv") {
			hosts := []string{h}
			if got := s.suggestReceiving(r[0], hosts, c.classifyDomain(r[0], hosts), parkNone); got != "" {
				t.Errorf("%s (%s) at %s: suggested %s", r[0], r[2], h, got)
			}
		}
	}
}

func TestSuggestRules(t *testing.T) {
	t.Parallel()
	c := defaultClassifier(t)
	s := newSuggester(c)
	const (
		none    = "-"
		parked  = "mx.sedoparking.com"
		other   = "mx.catchall-inbox.net"
		google  = "aspmx.l.google.com"
		burner  = "mail.mailinator.com"
		ownHost = "own"
	)
	tests := []struct {
		domain, mx string
		want       string
	}{
		{"gmial.com", other, "gmail.com"},               // typosquat with a mail server
		{"gmial.com", none, "gmail.com"},                // NXDOMAIN
		{"gmail.con", none, "gmail.com"},                // broken TLD
		{"acme-widgets.con", none, "acme-widgets.com"},  // broken TLD on any domain
		{"acme-widgets.con", other, "acme-widgets.com"}, // whatever its MX
		{"example-shop.ogr", none, "example-shop.org"},
		{"gmial.con", none, "gmail.com"}, // both at once
		{"ibm.con", none, "ibm.com"},     // a known company, not the nearest provider
		{"ibn.con", none, "ibn.com"},     // two edits from aim.com: the company it was
		{"hotmial.com", none, "hotmail.com"},
		{"yaho.com", none, "yahoo.com"},          // a typo listed in the free list
		{"sbcglbal.net", other, "sbcglobal.net"}, // the same, receiving mail
		{"qx.co", none, ""},                      // short: two edits would reach anything
		{"qq.co", none, "qq.com"},                // short, one edit
		{"gmaiil.co", other, "gmail.com"},        // two edits from a global provider
		{"gmaiil.co", ownHost, ""},               // the same at its own host: a company
		{"gmaiil.co", google, ""},                // hosted by a provider: a company
		{"gmaiil.co", parked, "gmail.com"},       // parked
		{"hotmial.co.uk", other, "hotmail.co.uk"},
		{"hotmial.co.ukk", other, ""}, // two edits from a regional provider
		{"hotmial.co.ukk", none, "hotmail.co.uk"},
		{"hotmal.it", parked, "hotmail.it"}, // a country variant
		{"gmx.dr", burner, "gmx.de"},        // a listed burner's host
		{"acme-corp.com", other, ""},        // a domain like any other
		{"acme-corp.com", none, ""},         // nothing popular nearby
		{"gmail.com", none, ""},             // never the domain itself
		{"me.com", none, ""},
		{"mail.com", other, ""},
		{"max.com", none, ""},        // a company one edit from mac.com
		{"cloud.com", other, ""},     // a company one edit from icloud.com
		{"pcloud.com", parked, ""},   // whatever its MX
		{"yahoo.com.br", other, ""},  // a country variant
		{"hotmart.com", other, ""},   // a company two edits from hotmail.com
		{"snail.com", ownHost, ""},   // two edits from gmail.com, its own host
		{"gmx.ed", other, "gmx.de"},  // no .ed exists: a known name's suffix slip is fixed anywhere
		{"gmx.ed", parked, "gmx.de"}, // short and parked
		{"gmx.st", other, ""},        // .st exists: gmx.st may be someone's
		{"gmx.st", none, "gmx.at"},   // and when it receives no mail it is a slip
		// Suffix slips of every country: a known name under no such
		// suffix, whatever its MX hosts; under a real one, only without
		// mail.
		{"hotmail.con.ar", other, "hotmail.com.ar"},
		{"hotmail.con.ar", ownHost, "hotmail.com.ar"},
		{"freemail.hy", other, "freemail.hu"},
		{"citromail.hi", none, "citromail.hu"},
		{"yahoo.co.ul", ownHost, "yahoo.co.uk"},
		{"yahoo.co.k", none, "yahoo.co.uk"},
		{"yahoo.cmo.mx", other, "yahoo.com.mx"},
		{"bol.comm.br", ownHost, "bol.com.br"},
		{"web.ed", ownHost, "web.de"},
		{"t-online.dee", other, "t-online.de"},
		{"orange.ft", none, "orange.fr"},
		{"terra.com.bt", none, "terra.com.br"},
		{"terra.com.bt", ownHost, ""}, // .com.bt exists: someone's at its own host
		{"wanadoo.fe", parked, "wanadoo.fr"},
		{"acme-shop.fe", none, ""}, // an unknown name: nothing to fix it to
		// Two edits on a short name reaching two targets of about one
		// size: no guess; one far heavier leads.
		{"mali.uz", none, ""},           // mail.kz or mail.az
		{"wbe.dd", none, ""},            // web.de or web.dk... or none
		{"yahpo.co", none, "yahoo.com"}, // yahoo.cl is as close, and far lighter
		{"gmaol.co", none, "gmail.com"}, // no other target as close
		// A global provider's name with a letter doubled, at its own host.
		{"gmaill.com", ownHost, "gmail.com"},
		{"outlookk.com", ownHost, "outlook.com"},
		{"yahooo.com", ownHost, "yahoo.com"},
		{"hhotmail.com", ownHost, "hotmail.com"},
		{"yahooo.net", ownHost, ""},  // and another TLD: a company may be so named
		{"hotmaol.com", ownHost, ""}, // a letter replaced, not doubled: as a company's
		{"qa.com", other, ""},        // two letters: one edit from many companies' names
		{"gm.com", parked, ""},       // a known company
		{"hotmale.com", parked, "hotmail.com"},
		// At a third party's host, the weak sign every customer of an
		// unlisted web host shows: a name one edit from a regional
		// provider's or an ISP's is corrected only when long, a global
		// provider's from five characters, and the provider's very name
		// under a mistyped suffix always.
		{"haver.com", other, ""},
		{"haver.com", parked, "naver.com"},
		{"naver.co", other, "naver.com"},
		{"comcats.net", other, "comcast.net"},
		{"orang.fr", other, ""},
		{"orang.fr", parked, "orange.fr"},
		{"mall.com", other, ""}, // not gmail.com either: two edits in the name
		{"gnail.co", other, "gmail.com"},
		{"gmai.co", other, ""},
		{"libera.it", other, ""},
		{"libera.it", burner, "libero.it"},
	}
	for _, tt := range tests {
		if got := suggestFor(c, s, tt.domain, tt.mx); got != tt.want {
			t.Errorf("suggest(%q, mx %s) = %q, want %q", tt.domain, tt.mx, got, tt.want)
		}
	}
	// DNS that could not answer is no evidence either way.
	if got := s.suggest("gmial.com", true); got != "" {
		t.Errorf("gmial.com, DNS unknown: %q", got)
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
	if got := suggestFor(c, s, "gmail.co", "mx.catchall-inbox.net"); got != "" {
		t.Errorf("gmail.co listed as real: suggested %q", got)
	}
	dc := defaultClassifier(t)
	if got := suggestFor(dc, newSuggester(dc), "gmail.co", "mx.catchall-inbox.net"); got != "gmail.com" {
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
		hosts := []string{"mx.catchall-inbox.net"}
		if r := s.suggestReceiving(domain, hosts, domainClass{}, parkNone); r != "" && r == domain {
			t.Fatalf("suggestReceiving(%q) = the input itself", domain)
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

// BenchmarkSuggestReceiving is the path the validator takes for every
// domain it resolves that receives mail: the name alone, then its MX
// hosts weighed. One at its own host (the common case, decided without a
// search), one at a third party's host (a search of the targets within
// reach), one there within reach of a target but with a name of its own
// (haver.com, one edit from naver.com: its name is weighed too), and a
// typo.
func BenchmarkSuggestReceiving(b *testing.B) {
	c := defaultClassifier(b)
	s := newSuggester(c)
	for _, bc := range []struct{ name, domain, mx string }{
		{"OwnHost", "acme-widgets.com", "mx1.acme-widgets.com"},
		{"ThirdParty", "acme-widgets.com", "mx.catchall-inbox.net"},
		{"ThirdPartyNear", "haver.com", "mx.catchall-inbox.net"},
		{"Typo", "hotmale.com", "mx.catchall-inbox.net"},
	} {
		hosts := []string{bc.mx}
		dc := c.classifyDomain(bc.domain, hosts)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkString = s.suggestReceiving(bc.domain, hosts, dc, parkNone)
			}
		})
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

func TestKeySlip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typed, want string
		slip        bool
	}{
		{"con", "com", true},  // n beside m
		{"cmo", "com", true},  // swapped
		{"om", "com", true},   // a letter left out
		{"comm", "com", true}, // doubled
		{"ed", "de", true},
		{"hy", "hu", true},
		{"con.ar", "com.ar", true},
		{"co.ul", "co.uk", true},
		{"com.bt", "com.br", true}, // t above r's right
		{"cpm", "com", true},       // p beside o
		{"cim", "com", true},       // i beside o
		{"ckm", "com", true},       // k below o's left
		{"cqm", "com", false},      // q is far from o
		{"com", "com", false},      // no slip at all
		{"cxom", "com", false},     // an extra letter, not a doubled one
		{"moc", "com", false},      // two edits
		{"de", "fr", false},
		{"c0m", "com", false}, // not a letter
	}
	for _, tt := range tests {
		if got := keySlip(tt.typed, tt.want); got != tt.slip {
			t.Errorf("keySlip(%q, %q) = %v, want %v", tt.typed, tt.want, got, tt.slip)
		}
	}
	// Adjacency is symmetric and never holds for a letter and itself.
	for a := byte('a'); a <= 'z'; a++ {
		if keysAdjacent(a, a) {
			t.Errorf("%c is its own neighbour", a)
		}
		n := 0
		for b := byte('a'); b <= 'z'; b++ {
			if keysAdjacent(a, b) != keysAdjacent(b, a) {
				t.Errorf("%c and %c: not symmetric", a, b)
			}
			if keysAdjacent(a, b) {
				n++
			}
		}
		if n < 2 || n > 6 {
			t.Errorf("%c has %d neighbours", a, n)
		}
	}
}
