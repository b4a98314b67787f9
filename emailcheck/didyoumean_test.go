package emailcheck_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// did_you_mean is filled from the lookups the validation makes anyway and
// never changes the verdict.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, dnstest.Zone{
		"gmail.com":     {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}},
		"gmial.com":     {MX: []dnstest.MX{{Pref: 10, Host: "mx.typosquat.net"}}}, // a typosquat that takes mail
		"acme-corp.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.acme-corp.com"}}},
		// A two-edit slip of a top provider, parked; a company one edit
		// from a provider, hosted by Microsoft; a typo of a regional
		// provider at a third party's host.
		"hotmale.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.sedoparking.com", Addrs: []string{"185.53.177.20"}}}},
		"cloud.com":   {MX: []dnstest.MX{{Pref: 10, Host: "cloud-com.mail.protection.outlook.com"}}},
		"hotmial.it":  {MX: []dnstest.MX{{Pref: 10, Host: "mx.catchall-inbox.net"}}},
		"gmaiil.co":   {MX: []dnstest.MX{{Pref: 10, Host: "mail.gmaiil.co"}}}, // its own host
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tests := []struct {
		email  string
		want   string
		status emailcheck.Status
	}{
		{"Jane.Doe@gamil.com", "Jane.Doe@gmail.com", emailcheck.StatusInvalidDomain},
		{"jane@gmial.com", "jane@gmail.com", emailcheck.StatusDisposable}, // on the burner list too
		{"jane@gmail.con", "jane@gmail.com", emailcheck.StatusInvalidDomain},
		{"jane-x@yahoo.cm", "jane-x@yahoo.com", emailcheck.StatusInvalidDomain}, // Yahoo's "-tag" rule does not apply
		{"jane@hotmial.com", "jane@hotmail.com", emailcheck.StatusInvalidDomain},
		{"jane@gmail.com", "", emailcheck.StatusLikely},
		{"jane@acme-corp.com", "", emailcheck.StatusLikely},
		{"jane@acme-corp.con", "jane@acme-corp.com", emailcheck.StatusInvalidDomain},
		{"not an address", "", emailcheck.StatusInvalidFormat},
		{"jane@hotmale.com", "jane@hotmail.com", emailcheck.StatusLikely},
		{"jane@hotmial.it", "jane@hotmail.it", emailcheck.StatusLikely},
		{"jane@cloud.com", "", emailcheck.StatusLikely},
		{"jane@gmaiil.co", "", emailcheck.StatusLikely},
		{"jane@yahooo.fr", "jane@yahoo.fr", emailcheck.StatusInvalidDomain},
		{"jane@sbcglbal.net", "jane@sbcglobal.net", emailcheck.StatusInvalidDomain},
	}
	for _, tt := range tests {
		srv.ResetCounts()
		res, err := v.Validate(context.Background(), tt.email)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if res.DidYouMean != nil {
			got = *res.DidYouMean
		}
		if got != tt.want || res.Confidence.Status != tt.status {
			t.Errorf("%s: did_you_mean %q, status %s; want %q, %s", tt.email, got, res.Confidence.Status, tt.want, tt.status)
		}
		// A typo is never free, and a domain that does not exist has no
		// provider.
		if got != "" && res.Provider.IsFree {
			t.Errorf("%s: a typo domain is free", tt.email)
		}
		if tt.status == emailcheck.StatusInvalidDomain && res.Provider.Name != "Unknown" {
			t.Errorf("%s: provider %q for a domain that does not exist", tt.email, res.Provider.Name)
		}
		if tt.status == emailcheck.StatusInvalidDomain && res.Confidence.AliasStatus == emailcheck.AliasConfirmed {
			t.Errorf("%s: a provider's alias rule applied to a domain that does not exist", tt.email)
		}
		// The same score as without a suggestion: a status decides it.
		checkScoreConsistent(t, res)
		// Only the address's own MX question is asked (sent again, on a
		// loaded machine, if its answer comes after the RTO), besides the
		// check that the server tells the truth (the root's and com's SOA).
		domain := tt.email[strings.LastIndex(tt.email, "@")+1:]
		trust := srv.QueryCount(".", dns.TypeSOA) + srv.QueryCount("com", dns.TypeSOA)
		if n := srv.QueryCount(domain, dns.TypeMX); tt.status == emailcheck.StatusInvalidDomain && (n < 1 || srv.Queries()-trust != n) {
			t.Errorf("%s: %d queries, %d of them the MX query, for an NXDOMAIN with a suggestion; want the MX query only", tt.email, srv.Queries(), n)
		}
	}
}

// A typo of a provider's domain is not the provider's: its provider and
// alias rule come from its MX hosts alone, never from its name. yahoo.cm
// parked is no Yahoo mailbox, so "-x" is no tag there; the same typo
// whose mail really goes to Yahoo keeps Yahoo's rule.
func TestDidYouMeanTypoProvider(t *testing.T) {
	t.Parallel()
	parked := []dnstest.MX{{Pref: 10, Host: "mx.sedoparking.com"}}
	srv := dnstest.Start(t, dnstest.Zone{
		"yahoo.cm":  {MX: parked},
		"yahoo.om":  {MX: parked},
		"yahoo.co":  {MX: parked},
		"yahoo.con": {A: []string{"192.0.2.10"}},                                         // no MX: a broken TLD
		"vahoo.com": {MX: []dnstest.MX{{Pref: 10, Host: "mta5.am0.yahoodns.net"}}},       // a listed typo, at Yahoo
		"yahoo.fr":  {MX: []dnstest.MX{{Pref: 10, Host: "mx-eu.mail.am0.yahoodns.net"}}}, // the real one
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tests := []struct {
		email, suggestion, provider string
		alias                       emailcheck.AliasStatus
		canonical                   string
	}{
		{"jane-x@yahoo.cm", "jane-x@yahoo.com", "sedoparking.com", emailcheck.AliasMaybeNot, ""},
		{"jane-x@yahoo.om", "jane-x@yahoo.com", "sedoparking.com", emailcheck.AliasMaybeNot, ""},
		{"jane-x@yahoo.co", "jane-x@yahoo.com", "sedoparking.com", emailcheck.AliasMaybeNot, ""},
		{"jane+x@yahoo.cm", "jane+x@yahoo.com", "sedoparking.com", emailcheck.AliasPossible, "jane@yahoo.cm"},
		{"jane-x@yahoo.con", "jane-x@yahoo.com", "Unknown", emailcheck.AliasMaybeNot, ""},
		{"jane-x@vahoo.com", "jane-x@yahoo.com", "Yahoo", emailcheck.AliasConfirmed, "jane@vahoo.com"},
		{"jane-x@yahoo.fr", "", "Yahoo", emailcheck.AliasConfirmed, "jane@yahoo.fr"},
	}
	for _, tt := range tests {
		res, err := v.Validate(context.Background(), tt.email)
		if err != nil {
			t.Fatal(err)
		}
		got, canonical := "", ""
		if res.DidYouMean != nil {
			got = *res.DidYouMean
		}
		if res.Confidence.CanonicalEmail != nil {
			canonical = *res.Confidence.CanonicalEmail
		}
		if got != tt.suggestion || res.Provider.Name != tt.provider || res.Confidence.AliasStatus != tt.alias || canonical != tt.canonical {
			t.Errorf("%s: did_you_mean %q, provider %q, %s, canonical %q; want %q, %q, %s, %q",
				tt.email, got, res.Provider.Name, res.Confidence.AliasStatus, canonical,
				tt.suggestion, tt.provider, tt.alias, tt.canonical)
		}
		if got != "" && res.Provider.IsFree {
			t.Errorf("%s: a typo domain is free", tt.email)
		}
	}
}

// A domain whose mail goes to a registrar's default host gets its
// suggestion unless its name is short; one whose MX host has a name of its
// own but an address a parking service's host was seen at is parked too,
// once that address is known. The verdict stays the same.
func TestDidYouMeanParkedHosts(t *testing.T) {
	t.Parallel()
	const sedo = "185.53.177.21"
	srv := dnstest.Start(t, dnstest.Zone{
		"hotmial.de":   {MX: []dnstest.MX{{Pref: 0, Host: "smtp.secureserver.net"}, {Pref: 10, Host: "mailstore1.secureserver.net"}}},
		"wbe.de":       {MX: []dnstest.MX{{Pref: 0, Host: "smtp.secureserver.net"}}},
		"yahooo.es":    {MX: []dnstest.MX{{Pref: 10, Host: "eforward1.registrar-servers.com"}}},
		"hotmale.com":  {MX: []dnstest.MX{{Pref: 10, Host: "mx.sedoparking.com", Addrs: []string{sedo}}}},
		"hotmial.fr":   {MX: []dnstest.MX{{Pref: 10, Host: "mx.hotmial.fr", Addrs: []string{sedo}}}},
		"outlok.de":    {MX: []dnstest.MX{{Pref: 10, Host: "mx.outlok.de", Addrs: []string{sedo}}}},
		"acme-shop.fr": {MX: []dnstest.MX{{Pref: 10, Host: "mx.acme-shop.fr", Addrs: []string{sedo}}}},
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	steps := []struct{ email, want string }{
		{"jane@hotmial.de", "jane@hotmail.de"},
		{"jane@wbe.de", ""}, // short: its real owners far outnumber typos
		{"jane@yahooo.es", "jane@yahoo.es"},
		{"jane@hotmial.fr", ""}, // its own host, whose address nothing taught yet
		{"jane@hotmale.com", "jane@hotmail.com"},
		{"jane@outlok.de", "jane@outlook.de"}, // the address is a parking service's
		{"jane@acme-shop.fr", ""},             // parked, but like no provider
	}
	for _, st := range steps {
		res, err := v.Validate(context.Background(), st.email)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if res.DidYouMean != nil {
			got = *res.DidYouMean
		}
		if got != st.want || res.Confidence.Status != emailcheck.StatusLikely {
			t.Errorf("%s: did_you_mean %q, status %s; want %q, LIKELY", st.email, got, res.Confidence.Status, st.want)
		}
		checkScoreConsistent(t, res)
	}
}

// readRows returns the tab-separated rows of a testdata file, without
// comments.
func readRows(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimRight(line, "\n"); line != "" && line[0] != '#' {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

// The typo corpus and the legitimate domains end to end: each domain served
// by a DNS server with the MX hosts the corpus assumes (a typo without mail
// does not exist), validated by one Validator that has learned the MX
// addresses of two listed burners first. Every typo gets its suggestion but
// the expected misses, and no legitimate domain gets one or is disposable.
func TestCorpusEndToEnd(t *testing.T) {
	t.Parallel()
	zone := dnstest.Zone{
		"guerrillamail.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.guerrillamail.com", Addrs: []string{"185.199.1.10"}}}},
		"sharklasers.com":   {MX: []dnstest.MX{{Pref: 10, Host: "mx.sharklasers.com", Addrs: []string{"185.199.1.10"}}}},
	}
	// Each host name has an address of its own, as on the Internet:
	// addresses that parking services' hosts teach must not spread.
	addrs := map[string]string{}
	hosts := func(domain, mx string) []dnstest.MX {
		if mx == "own" {
			mx = "mx1." + domain
		}
		var out []dnstest.MX
		for i, h := range strings.Split(mx, ",") {
			if addrs[h] == "" {
				n := len(addrs) + 1
				addrs[h] = fmt.Sprintf("11.%d.%d.%d", n>>16&255, n>>8&255, n&255)
			}
			out = append(out, dnstest.MX{Pref: uint16(10 * (i + 1)), Host: h, Addrs: []string{addrs[h]}})
		}
		return out
	}
	typos := readRows(t, "testdata/typos.tsv")
	real := readRows(t, "testdata/not_typos.tsv")
	for _, r := range typos {
		if r[2] != "-" {
			zone[r[0]] = dnstest.Domain{MX: hosts(r[0], r[2])}
		}
	}
	for _, r := range real {
		zone[r[0]] = dnstest.Domain{MX: hosts(r[0], r[1])}
	}
	srv := dnstest.Start(t, zone, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	validate := func(email string) emailcheck.Result {
		t.Helper()
		res, err := v.Validate(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status == emailcheck.StatusUnknown {
			t.Fatalf("%s: UNKNOWN", email)
		}
		return res
	}
	for _, d := range []string{"guerrillamail.com", "sharklasers.com"} {
		if res := validate("x@" + d); res.Confidence.Status != emailcheck.StatusDisposable {
			t.Fatalf("%s: %s", d, res.Confidence.Status)
		}
	}
	right := 0
	for _, r := range typos {
		res := validate("jane@" + r[0])
		got := ""
		if res.DidYouMean != nil {
			got = strings.TrimPrefix(*res.DidYouMean, "jane@")
		}
		switch {
		case got == r[1]:
			right++
		case got == "" && strings.HasPrefix(r[3], "expected miss"):
		default:
			t.Errorf("%s (mx %s): did_you_mean %q, want %s", r[0], r[2], got, r[1])
		}
		if res.Provider.IsFree {
			t.Errorf("%s: a typo domain is free", r[0])
		}
	}
	for _, r := range real {
		res := validate("jane@" + r[0])
		if res.DidYouMean != nil || res.Confidence.Status != emailcheck.StatusLikely {
			t.Errorf("%s (mx %s): status %s, did_you_mean %v", r[0], r[1], res.Confidence.Status, res.DidYouMean)
		}
	}
	t.Logf("%d of %d typos corrected, %d legitimate domains left alone", right, len(typos), len(real))
}
