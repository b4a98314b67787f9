package emailcheck

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestReviewedCorpus measures the suggestions on cases written by a
// reviewer who read neither the rules nor their known-domain data
// (testdata/typos_reviewed.tsv, testdata/not_typos_reviewed.tsv): figures
// closer to an independent measure than TestSuggestCorpus's. It fails on a
// false alarm or a wrong suggestion (precision below 0.98); recall is
// reported (go test -v -run ReviewedCorpus).
func TestReviewedCorpus(t *testing.T) {
	t.Parallel()
	c := defaultClassifier(t)
	s := newSuggester(c)
	typos := readTSV(t, "testdata/typos_reviewed.tsv")
	real := readTSV(t, "testdata/not_typos_reviewed.tsv")
	if len(typos) < 100 || len(real) < 100 {
		t.Fatalf("corpus too small: %d typos, %d real domains", len(typos), len(real))
	}
	tally := newCorpusTally()
	var missed []string
	for _, r := range typos {
		if len(r) != 4 {
			t.Fatalf("typo row %q: %d fields, want 4", r, len(r))
		}
		got := suggestFor(c, s, r[0], r[2])
		kind := r[3]
		if i := strings.IndexAny(kind, "(,;"); i > 0 {
			kind = strings.TrimSpace(kind[:i])
		}
		tally.add(kind, r[2], r[1], got)
		switch got {
		case r[1]:
		case "":
			missed = append(missed, r[0]+" → "+r[1]+" (mx "+r[2]+")")
		default:
			t.Errorf("%s (%s, mx %s): suggested %s, want %s", r[0], r[3], r[2], got, r[1])
		}
	}
	falsePos := 0
	for _, r := range real {
		if len(r) < 2 {
			t.Fatalf("real row %q: want domain and mx", r)
		}
		if got := suggestFor(c, s, r[0], r[1]); got != "" {
			falsePos++
			t.Errorf("%s (mx %s): suggested %s, want none", r[0], r[1], got)
		}
	}
	all := tally.all
	precision := all.precision(falsePos)
	t.Logf("reviewed corpus: %d typos, %d real domains: %d right, %d wrong, %d false alarms; precision %.3f, recall %.3f",
		all.n, len(real), all.right, all.wrong, falsePos, precision, all.recall())
	tally.logGroups(t, 45)
	for _, m := range missed {
		t.Logf("  missed: %s", m)
	}
	if precision < 0.98 {
		t.Errorf("precision %.3f, want at least 0.98", precision)
	}
}

// readDomains reads a reviewed list: one domain per line, "#" comments.
func readDomains(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, strings.ToLower(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReviewedClasses checks the reviewer's lists of free webmail, paid
// and forwarding domains, and burners: each is classified as the reviewer
// says, at a mail host of its own.
func TestReviewedClasses(t *testing.T) {
	t.Parallel()
	c := defaultClassifier(t)
	for _, tc := range []struct {
		file string
		want func(domainClass) bool
		what string
	}{
		{"testdata/free_reviewed.txt", func(d domainClass) bool { return d.free && !d.disposable }, "free and not disposable"},
		{"testdata/not_free_reviewed.txt", func(d domainClass) bool { return !d.free && !d.disposable }, "neither free nor disposable"},
		{"testdata/burners_reviewed.txt", func(d domainClass) bool { return d.disposable }, "disposable"},
	} {
		domains := readDomains(t, tc.file)
		if len(domains) < 40 {
			t.Fatalf("%s: only %d domains", tc.file, len(domains))
		}
		wrong := 0
		for _, d := range domains {
			if got := c.classifyDomain(d, []string{"mx1." + d}); !tc.want(got) {
				wrong++
				t.Errorf("%s: free %v, disposable %v; want %s", d, got.free, got.disposable, tc.what)
			}
		}
		t.Logf("%s: %d of %d %s", tc.file, len(domains)-wrong, len(domains), tc.what)
	}
}
