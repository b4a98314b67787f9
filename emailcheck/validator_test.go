package emailcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// testZone is the DNS world of these tests.
func testZone() dnstest.Zone {
	return dnstest.Zone{
		"good.com":         {MX: []dnstest.MX{{Pref: 10, Host: "mx1.good.com"}, {Pref: 20, Host: "mx2.good.com"}}},
		"nodata.com":       {TXT: []string{"v=spf1 -all"}},
		"servfail.com":     {Rcode: dns.RcodeServerFailure},
		"refused.com":      {Rcode: dns.RcodeRefused},
		"timeout.com":      {Drop: true},
		"garbage.com":      {Garbage: true},
		"wrongid.com":      {WrongID: true},
		"truncated.com":    {Truncate: true, MX: []dnstest.MX{{Pref: 10, Host: "mx.truncated.com"}}},
		"nullmx.com":       {MX: []dnstest.MX{{Pref: 0, Host: "."}}, A: []string{"192.0.2.1"}},
		"aonly.com":        {A: []string{"192.0.2.10"}},
		"loopbacka.com":    {A: []string{"127.0.0.1"}},
		"localmx.com":      {MX: []dnstest.MX{{Pref: 10, Host: "localhost"}}},
		"localmxa.com":     {MX: []dnstest.MX{{Pref: 10, Host: "localhost"}}, A: []string{"192.0.2.10"}},
		"cnodata.com":      {CNAME: "nodata.com"},
		"ipmx.com":         {MX: []dnstest.MX{{Pref: 10, Host: "192.0.2.25"}}},
		"alias.com":        {CNAME: "target.net"},
		"target.net":       {MX: []dnstest.MX{{Pref: 5, Host: "mail.target.net"}}},
		"xn--bcher-kva.de": {MX: []dnstest.MX{{Pref: 10, Host: "mx.xn--bcher-kva.de"}}},
		"mailinator.com":   {MX: []dnstest.MX{{Pref: 10, Host: "mail.mailinator.com"}}},
		"inbox.mailinator.com": {
			MX: []dnstest.MX{{Pref: 10, Host: "mail.mailinator.com"}},
		},
		"burner-front.com": {MX: []dnstest.MX{{Pref: 10, Host: "mail2.mailinator.com"}}},
		"gmail.com":        {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}},
		"workspace.io":     {MX: []dnstest.MX{{Pref: 1, Host: "aspmx.l.google.com"}}},
		"outlook.com":      {MX: []dnstest.MX{{Pref: 5, Host: "outlook-com.olc.protection.outlook.com"}}},
		"yahoo.com":        {MX: []dnstest.MX{{Pref: 1, Host: "mta5.am0.yahoodns.net"}}},
		"blocked.org":      {MX: []dnstest.MX{{Pref: 10, Host: "mx.blocked.org"}}},
	}
}

// testQueryTimeout is the tests' QueryTimeout where an answer is expected:
// long enough for any loaded machine.
const testQueryTimeout = 30 * time.Second

// failFast is the QueryTimeout of tests where no answer is expected (a
// dropped query), so that they do not wait long for nothing.
const failFast = 100 * time.Millisecond

type bundle struct {
	srv *dnstest.Server
	v   *emailcheck.Validator
}

func setup(t testing.TB, cfg emailcheck.Config) bundle {
	t.Helper()
	srv := dnstest.Start(t, testZone(), nil)
	cfg.Nameservers = []string{srv.Addr()}
	if cfg.QueryTimeout == 0 {
		// A loaded machine may answer a loopback query late; a lost
		// answer costs a retransmission after the measured RTO, not this.
		cfg.QueryTimeout = testQueryTimeout
	}
	v, err := emailcheck.New(&cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { v.Close() })
	return bundle{srv: srv, v: v}
}

func TestValidateStatuses(t *testing.T) {
	t.Parallel()
	type want struct {
		status                  emailcheck.Status
		syntax, exists, mx, dis bool
		score                   int
		provider                string
	}
	tests := []struct {
		name, email string
		implicitMX  bool
		want        want
	}{
		{"likely", "jane@good.com", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "good.com"}},
		{"bad syntax", "jane@@good.com", false, want{emailcheck.StatusInvalidFormat, false, false, false, false, 0, "Unknown"}},
		{"empty", "", false, want{emailcheck.StatusInvalidFormat, false, false, false, false, 0, "Unknown"}},
		{"nxdomain", "jane@nx-nowhere.com", false, want{emailcheck.StatusInvalidDomain, true, false, false, false, 5, "Unknown"}},
		{"nodata", "jane@nodata.com", false, want{emailcheck.StatusNoMXRecords, true, true, false, false, 10, "Unknown"}},
		{"servfail", "jane@servfail.com", false, want{emailcheck.StatusUnknown, true, false, false, false, 40, "Unknown"}},
		{"refused", "jane@refused.com", false, want{emailcheck.StatusUnknown, true, false, false, false, 40, "Unknown"}},
		{"timeout", "jane@timeout.com", false, want{emailcheck.StatusUnknown, true, false, false, false, 40, "Unknown"}},
		{"garbage answer", "jane@garbage.com", false, want{emailcheck.StatusUnknown, true, false, false, false, 40, "Unknown"}},
		{"mismatched id", "jane@wrongid.com", false, want{emailcheck.StatusUnknown, true, false, false, false, 40, "Unknown"}},
		{"truncated then tcp", "jane@truncated.com", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "truncated.com"}},
		{"null mx", "jane@nullmx.com", false, want{emailcheck.StatusNoMXRecords, true, true, false, false, 5, "Unknown"}},
		{"null mx ignores A under implicit", "jane@nullmx.com", true, want{emailcheck.StatusNoMXRecords, true, true, false, false, 5, "Unknown"}},
		{"A only", "jane@aonly.com", false, want{emailcheck.StatusNoMXRecords, true, true, false, false, 10, "Unknown"}},
		{"A only implicit", "jane@aonly.com", true, want{emailcheck.StatusLikely, true, true, false, false, 65, "Unknown"}},
		{"loopback A implicit", "jane@loopbacka.com", true, want{emailcheck.StatusNoMXRecords, true, true, false, false, 10, "Unknown"}},
		{"nxdomain implicit", "jane@nx-nowhere.com", true, want{emailcheck.StatusInvalidDomain, true, false, false, false, 5, "Unknown"}},
		{"mx localhost", "jane@localmx.com", false, want{emailcheck.StatusNoMXRecords, true, true, false, false, 10, "Unknown"}},
		{"mx ip address", "jane@ipmx.com", false, want{emailcheck.StatusNoMXRecords, true, true, false, false, 10, "Unknown"}},
		{"unusable mx blocks implicit fallback", "jane@localmxa.com", true, want{emailcheck.StatusNoMXRecords, true, true, false, false, 10, "Unknown"}},
		{"cname to nodata", "jane@cnodata.com", false, want{emailcheck.StatusNoMXRecords, true, true, false, false, 10, "Unknown"}},
		{"cname at domain", "jane@alias.com", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "target.net"}},
		{"idn domain", "jane@bücher.de", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "xn--bcher-kva.de"}},
		{"disposable", "x@mailinator.com", false, want{emailcheck.StatusDisposable, true, true, true, true, 20, "mailinator.com"}},
		{"disposable parent", "x@inbox.mailinator.com", false, want{emailcheck.StatusDisposable, true, true, true, true, 20, "mailinator.com"}},
		{"disposable by mx", "x@burner-front.com", false, want{emailcheck.StatusDisposable, true, true, true, true, 20, "mailinator.com"}},
		{"special use", "jane@mail.test", false, want{emailcheck.StatusInvalid, true, false, false, false, 0, "Unknown"}},
		{"example.com", "jane@sub.example.com", false, want{emailcheck.StatusInvalid, true, false, false, false, 0, "Unknown"}},
		{"blocked", "jane@mail.blocked.org", false, want{emailcheck.StatusInvalid, true, false, false, false, 0, "Unknown"}},
		{"role lowers score", "admin@good.com", false, want{emailcheck.StatusLikely, true, true, true, false, 75, "good.com"}},
		{"gmail", "jane@gmail.com", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "Google"}},
		{"workspace", "jane@workspace.io", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "Google"}},
		{"outlook", "jane@outlook.com", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "Microsoft"}},
		{"yahoo", "jane@yahoo.com", false, want{emailcheck.StatusLikely, true, true, true, false, 90, "Yahoo"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := emailcheck.Config{ImplicitMX: tc.implicitMX, BlockDomains: []string{"blocked.org"}}
			if tc.want.status == emailcheck.StatusUnknown {
				cfg.QueryTimeout = failFast // no answer is waited for in vain
			}
			b := setup(t, cfg)
			res, err := b.v.Validate(context.Background(), tc.email)
			if err != nil {
				t.Fatalf("Validate(%q): %v", tc.email, err)
			}
			got := want{res.Confidence.Status, res.Validations.Syntax, res.Validations.DomainExists,
				res.Validations.MXRecords, res.Validations.IsDisposable, res.Confidence.Score, res.Provider.Name}
			if got != tc.want {
				t.Errorf("Validate(%q)\n got %+v\nwant %+v", tc.email, got, tc.want)
			}
			if res.Email != tc.email {
				t.Errorf("Email = %q, want the input %q", res.Email, tc.email)
			}
			if res.Confidence.EquivalentDomains == nil {
				t.Error("EquivalentDomains is nil; want a non-nil slice")
			}
			checkScoreConsistent(t, res)
		})
	}
}

// checkScoreConsistent asserts the documented relation of score and status.
func checkScoreConsistent(t *testing.T, res emailcheck.Result) {
	t.Helper()
	s := res.Confidence.Score
	if s < 0 || s >= 100 {
		t.Errorf("score %d outside [0, 100)", s)
	}
	if (res.Confidence.Status == emailcheck.StatusLikely) != (s >= 50) {
		t.Errorf("status %s with score %d: LIKELY must be >= 50 and every other status < 50", res.Confidence.Status, s)
	}
}

func TestValidateSpecialUseSendsNoQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	for _, email := range []string{"a@x.test", "a@x.invalid", "a@x.localhost", "a@printer.local", "a@x.onion",
		"a@1.2.0.192.in-addr.arpa", "a@example.com", "a@example.net", "a@example.org", "a@mail.example", "a@corp.internal"} {
		res, err := b.v.Validate(context.Background(), email)
		if err != nil || res.Confidence.Status != emailcheck.StatusInvalid {
			t.Errorf("Validate(%q) = %s, %v; want INVALID", email, res.Confidence.Status, err)
		}
	}
	if n := b.srv.Queries(); n != 0 {
		t.Errorf("%d queries reached the server; want 0", n)
	}
}

func TestValidateClassification(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	str := func(s string) *string { return &s }
	tests := []struct {
		email      string
		role       bool
		alias      emailcheck.AliasStatus
		canonical  *string
		equivalent []string
	}{
		{"jane@good.com", false, emailcheck.AliasMaybeNot, nil, []string{}},
		{"Admin+alerts@good.com", true, emailcheck.AliasPossible, str("Admin@good.com"), []string{}},
		{"jane+news@good.com", false, emailcheck.AliasPossible, str("jane@good.com"), []string{}},
		{"John.Doe+news@gmail.com", false, emailcheck.AliasConfirmed, str("johndoe@gmail.com"), []string{"googlemail.com"}},
		{"jane+x@workspace.io", false, emailcheck.AliasConfirmed, str("jane@workspace.io"), []string{}},
		{"jane+shop@outlook.com", false, emailcheck.AliasConfirmed, str("jane@outlook.com"), []string{}},
		{"jane-shop@yahoo.com", false, emailcheck.AliasConfirmed, str("jane@yahoo.com"), []string{}},
		{"postmaster@yahoo.com", true, emailcheck.AliasMaybeNot, nil, []string{}},
	}
	for _, tc := range tests {
		res, err := b.v.Validate(context.Background(), tc.email)
		if err != nil {
			t.Fatalf("Validate(%q): %v", tc.email, err)
		}
		c := res.Confidence
		if c.IsRoleBased != tc.role || c.AliasStatus != tc.alias {
			t.Errorf("%s: role=%v alias=%s; want role=%v alias=%s", tc.email, c.IsRoleBased, c.AliasStatus, tc.role, tc.alias)
		}
		if (c.CanonicalEmail == nil) != (tc.canonical == nil) || (c.CanonicalEmail != nil && *c.CanonicalEmail != *tc.canonical) {
			t.Errorf("%s: canonical=%v; want %v", tc.email, deref(c.CanonicalEmail), deref(tc.canonical))
		}
		if !slices.Equal(c.EquivalentDomains, tc.equivalent) {
			t.Errorf("%s: equivalent=%q; want %q", tc.email, c.EquivalentDomains, tc.equivalent)
		}
		checkScoreConsistent(t, res)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestResultJSONShape(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	res, err := b.v.Validate(context.Background(), "jane@good.com", emailcheck.WithSource(emailcheck.SourceAPIAsync))
	if err != nil {
		t.Fatal(err)
	}
	res.Meta.LatencyMS = 3
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"email":"jane@good.com","validations":{"syntax":true,"domain_exists":true,"mx_records":true,"is_disposable":false},` +
		`"confidence":{"confidence_score":90,"status":"LIKELY","is_role_based":false,"alias_status":"MAYBE_NOT_ALIAS","canonical_email":null,"equivalent_domains":[]},` +
		`"provider":{"name":"good.com","is_free":false},"did_you_mean":null,"reason":"valid","meta":{"latency_ms":3,"source":"api_async"}}`
	if string(got) != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
}

func TestValidateCachesAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	ctx := context.Background()
	for i := range 50 {
		if _, err := b.v.Validate(ctx, fmt.Sprintf("user%d@good.com", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.v.Validate(ctx, fmt.Sprintf("user%d@nx-cached.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	// One lookup each, whose query is sent again only if its answer
	// comes after the RTO.
	if n := b.srv.QueryCount("good.com", dns.TypeMX); n < 1 || n > 1+emailcheck.DefaultRetries {
		t.Errorf("good.com MX queried %d times; want one lookup (cached)", n)
	}
	if n := b.srv.QueryCount("nx-cached.com", dns.TypeMX); n < 1 || n > 1+emailcheck.DefaultRetries {
		t.Errorf("nx-cached.com MX queried %d times; want one lookup (negative answer cached)", n)
	}
}

// A failure is cached for FailureTTL: asked again within it, the
// validator sends no query; after it, it asks again and takes the new
// answer.
func TestValidateFailuresCachedBriefly(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	b := setup(t, emailcheck.Config{FailureTTL: ttl, Retries: -1})
	ctx := context.Background()
	// The two calls must come within the TTL of the first answer; a
	// machine too loaded for that gets another try on a fresh domain.
	for try := 0; ; try++ {
		domain := fmt.Sprintf("fail%d.com", try)
		b.srv.Set(domain, dnstest.Domain{Rcode: dns.RcodeServerFailure})
		start := time.Now()
		for _, local := range []string{"a", "b"} {
			if res, err := b.v.Validate(ctx, local+"@"+domain); err != nil || res.Confidence.Status != emailcheck.StatusUnknown {
				t.Fatalf("%s@%s: %s, %v; want UNKNOWN", local, domain, res.Confidence.Status, err)
			}
		}
		if time.Since(start) >= ttl && try < 5 {
			continue
		}
		if n := b.srv.QueryCount(domain, dns.TypeMX); n != 1 {
			t.Errorf("queries within FailureTTL = %d; want 1", n)
		}
		// Once the domain recovers, it is asked again when the failure
		// expires, and the new answer is taken.
		b.srv.Set(domain, dnstest.Domain{MX: []dnstest.MX{{Pref: 1, Host: "mx." + domain}}})
		waitFor(t, func() bool {
			res, err := b.v.Validate(ctx, "c@"+domain)
			return err == nil && res.Confidence.Status == emailcheck.StatusLikely
		}, "LIKELY after FailureTTL and recovery")
		if n := b.srv.QueryCount(domain, dns.TypeMX); n != 2 {
			t.Errorf("queries after recovery = %d; want 2 (the failure, then the answer)", n)
		}
		return
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute", what)
		}
	}
}

func TestValidateSharesConcurrentLookups(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	b.srv.SetLatency(20 * time.Millisecond)
	const calls = 10_000
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		wg.Go(func() {
			res, err := b.v.Validate(context.Background(), fmt.Sprintf("u%d@good.com", i))
			if err == nil && res.Confidence.Status != emailcheck.StatusLikely {
				err = fmt.Errorf("status %s", res.Confidence.Status)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One MX query, and the MX host's A and AAAA, each sent again at
	// most as many times as the retries allow (an answer later than the
	// RTO on a loaded machine).
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"good.com", dns.TypeMX}, {"mx1.good.com", dns.TypeA}, {"mx1.good.com", dns.TypeAAAA}} {
		if n := b.srv.QueryCount(q.name, q.qtype); n < 1 || n > 1+emailcheck.DefaultRetries {
			t.Errorf("%s %s: %d queries for %d concurrent calls; want 1 to %d", q.name, dns.TypeToString[q.qtype], n, calls, 1+emailcheck.DefaultRetries)
		}
	}
	if n := b.srv.Queries(); n > 3*(1+emailcheck.DefaultRetries) {
		t.Errorf("%d queries reached the server for %d concurrent calls", n, calls)
	}
}

func TestValidateTimeoutBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{QueryTimeout: failFast, Retries: 1})
	// Without the bound, the call would never return: the server never
	// answers and ctx has no deadline.
	res, err := b.v.Validate(context.Background(), "a@timeout.com")
	if err != nil || res.Confidence.Status != emailcheck.StatusUnknown {
		t.Fatalf("got %s, %v; want UNKNOWN", res.Confidence.Status, err)
	}
	// The server may read the queries after the validator gave up.
	waitFor(t, func() bool { return b.srv.QueryCount("timeout.com", dns.TypeMX) >= 2 }, "two queries at the server")
	if n := b.srv.QueryCount("timeout.com", dns.TypeMX); n != 2 {
		t.Errorf("sent %d queries; want 2 (one retry)", n)
	}
}

func TestValidateContext(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{QueryTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.v.Validate(ctx, "a@good.com"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v; want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.v.Validate(ctx, "a@timeout.com")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v; want context.DeadlineExceeded", err)
	}
	// Waiting out the query's timeout would take an hour.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("returned after %v; want soon after the context's 50ms", d)
	}
}

func TestValidateBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	huge := strings.Repeat("a", 10<<20) + "@good.com"
	labels := strings.TrimSuffix(strings.Repeat("a.", 300), ".") + ".com"
	for _, email := range []string{"", " ", huge, "a@" + labels, "\xff\xfe@good.com", "a\x00b@good.com",
		"a\nb@good.com", "a@good.com\r\n", "<a@good.com>", "Jane <a@good.com>", "a@[127.0.0.1]"} {
		res, err := b.v.Validate(context.Background(), email)
		if err != nil {
			t.Errorf("Validate(%.30q): %v", email, err)
		}
		if res.Confidence.Status != emailcheck.StatusInvalidFormat {
			t.Errorf("Validate(%.30q) = %s; want INVALID_FORMAT", email, res.Confidence.Status)
		}
	}
	if n := b.srv.Queries(); n != 0 {
		t.Errorf("%d queries for malformed input; want 0", n)
	}
}

func TestAddressLiterals(t *testing.T) {
	t.Parallel()
	// A literal is judged like a domain with only an A record.
	tests := []struct {
		email    string
		implicit bool
		want     emailcheck.Status
		score    int
		role     bool
	}{
		{"a@[192.0.2.1]", false, emailcheck.StatusInvalid, 0, false}, // documentation range: not public
		{"a@[8.8.8.8]", false, emailcheck.StatusNoMXRecords, 10, false},
		{"a@[8.8.8.8]", true, emailcheck.StatusLikely, 65, false},
		{"admin@[8.8.8.8]", true, emailcheck.StatusLikely, 50, true},
		{"a@[127.0.0.1]", true, emailcheck.StatusInvalid, 0, false},
		{"a@[10.1.2.3]", true, emailcheck.StatusInvalid, 0, false},
		{"a@[IPv6:2001:4860::8888]", true, emailcheck.StatusLikely, 65, false},
		{"a@[IPv6:64:ff9b::7f00:1]", true, emailcheck.StatusInvalid, 0, false}, // NAT64 of loopback
		{"a@[IPv6:2002:a01:203::1]", true, emailcheck.StatusInvalid, 0, false}, // 6to4 of 10.1.2.3
		{"a@[IPv6:::ffff:127.0.0.1]", true, emailcheck.StatusInvalid, 0, false},
	}
	for _, tc := range tests {
		b := setup(t, emailcheck.Config{AllowAddressLiteral: true, ImplicitMX: tc.implicit})
		res, err := b.v.Validate(context.Background(), tc.email)
		c := res.Confidence
		if err != nil || c.Status != tc.want || c.Score != tc.score || c.IsRoleBased != tc.role {
			t.Errorf("Validate(%q, implicit=%v) = %s %d role=%v, %v; want %s %d role=%v",
				tc.email, tc.implicit, c.Status, c.Score, c.IsRoleBased, err, tc.want, tc.score, tc.role)
		}
		checkScoreConsistent(t, res)
	}
}

func TestQuotedLocalPartsAreTakenLiterally(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{AllowQuotedLocal: true})
	for _, email := range []string{`"john+doe"@gmail.com`, `"admin"@good.com`, `"a+b"@good.com`} {
		res, err := b.v.Validate(context.Background(), email)
		c := res.Confidence
		if err != nil || c.Status != emailcheck.StatusLikely || c.AliasStatus != emailcheck.AliasMaybeNot ||
			c.CanonicalEmail != nil || c.IsRoleBased {
			t.Errorf("Validate(%s) = %s alias=%s canonical=%s role=%v, %v; want LIKELY with no alias, canonical or role",
				email, c.Status, c.AliasStatus, deref(c.CanonicalEmail), c.IsRoleBased, err)
		}
	}
}

func TestCNAMEToNoDataIsOneQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	if _, err := b.v.Validate(context.Background(), "a@cnodata.com"); err != nil {
		t.Fatal(err)
	}
	if n := b.srv.QueryCount("nodata.com", dns.TypeMX); n != 0 || b.srv.Queries() != b.srv.QueryCount("cnodata.com", dns.TypeMX) {
		t.Errorf("%d queries, %d for the CNAME's target, for a CNAME to a name without MX; want the domain's MX only (the server followed the chain)", b.srv.Queries(), n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]emailcheck.Config{
		"ttl bounds":      {Nameservers: []string{"127.0.0.1:53"}, MinTTL: time.Hour, MaxTTL: time.Minute},
		"bad nameserver":  {Nameservers: []string{":"}},
		"bad block entry": {Nameservers: []string{"127.0.0.1:53"}, BlockDomains: []string{"bad..domain"}},
	} {
		if _, err := emailcheck.New(&cfg); err == nil {
			t.Errorf("%s: New succeeded; want an error", name)
		}
	}
}

func TestValidateManyOrderAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, emailcheck.Config{})
	emails := []string{"a@good.com", "bad", "b@nx-many.com", "c@gmail.com", "d@servfail.com"}
	var got []emailcheck.Status
	for res, err := range b.v.ValidateMany(context.Background(), slices.Values(emails), &emailcheck.ManyOptions{Concurrency: 2, Source: "dashboard"}) {
		if err != nil {
			t.Fatal(err)
		}
		if res.Meta.Source != "dashboard" {
			t.Errorf("source %q; want dashboard", res.Meta.Source)
		}
		got = append(got, res.Confidence.Status)
	}
	want := []emailcheck.Status{emailcheck.StatusLikely, emailcheck.StatusInvalidFormat, emailcheck.StatusInvalidDomain,
		emailcheck.StatusLikely, emailcheck.StatusUnknown}
	if !slices.Equal(got, want) {
		t.Errorf("statuses %v; want %v in input order", got, want)
	}

	// Breaking out early stops reading the input.
	read := 0
	endless := func(yield func(string) bool) {
		for i := 0; ; i++ {
			read++
			if !yield(fmt.Sprintf("u%d@good.com", i)) {
				return
			}
		}
	}
	n := 0
	for range b.v.ValidateMany(context.Background(), endless, &emailcheck.ManyOptions{Concurrency: 4}) {
		if n++; n == 10 {
			break
		}
	}
	if read > 10+4+1 {
		t.Errorf("read %d addresses for 10 results with concurrency 4; want back-pressure", read)
	}

	// A cancelled context ends the sequence with its error.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lastErr error
	count := 0
	for _, err := range b.v.ValidateMany(ctx, endless, nil) {
		if err != nil {
			lastErr = err
			break
		}
		if count++; count == 100 {
			cancel()
		}
	}
	if !errors.Is(lastErr, context.Canceled) {
		t.Errorf("after cancel: last error %v; want context.Canceled", lastErr)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	srv := dnstest.Start(t, testZone(), nil)
	before := runtime.NumGoroutine()
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	v.Validate(ctx, "a@timeout.com") // leaves a lookup in flight
	start := time.Now()
	v.Close()
	if d := time.Since(start); d > time.Minute { // waiting would take hours
		t.Errorf("Close took %v; want it to cancel the lookup in flight", d)
	}
	if _, err := v.Validate(context.Background(), "a@other-domain.com"); !errors.Is(err, emailcheck.ErrClosed) {
		t.Errorf("Validate after Close: %v; want ErrClosed", err)
	}
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close; %d before New", n, before)
	}
}

// A query whose answer does not come is sent again after the server's
// RTO, to the next nameserver: with a nameserver that never answers and
// a QueryTimeout of an hour, every lookup still ends LIKELY within the
// minute, whichever server is asked first.
func TestRetryMovesToNextNameserver(t *testing.T) {
	t.Parallel()
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	srv := dnstest.Start(t, testZone(), nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{silent.LocalAddr().String(), srv.Addr()}, QueryTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, email := range []string{"a@good.com", "a@gmail.com", "a@outlook.com", "a@yahoo.com", "a@alias.com", "a@workspace.io"} {
		res, err := v.Validate(ctx, email)
		if err != nil || res.Confidence.Status != emailcheck.StatusLikely {
			t.Fatalf("%s: %s, %v; want LIKELY", email, res.Confidence.Status, err)
		}
	}
	// The silent server never answered; the other did.
	st := v.ResolverStats()
	if len(st) != 2 || st[0].Addr != silent.LocalAddr().String() || st[1].Addr != srv.Addr() {
		t.Fatalf("ResolverStats %+v; want the two servers in order", st)
	}
	if st[0].SRTT != 0 || st[1].SRTT <= 0 {
		t.Errorf("silent server %+v, answering server %+v", st[0], st[1])
	}
	if err := v.PingNameservers(ctx); err != nil {
		t.Errorf("ping with one server answering: %v", err)
	}
}

// A burst of lookups against a nameserver that drops what it cannot hold
// (a modest resolver's full queue) ends with every address judged: the
// window keeps the queries in flight near what the server holds, and a
// dropped query is sent again after an RTO.
func TestBurstAgainstFiniteQueue(t *testing.T) {
	t.Parallel()
	opts := generatedZone()
	opts.MaxPending = 100
	srv := dnstest.Start(t, nil, opts)
	srv.SetLatency(20 * time.Millisecond)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: testQueryTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	emails := make([]string, 1000)
	for i := range emails {
		emails[i] = fmt.Sprintf("u@burst%d.bench", i)
	}
	for res, err := range v.ValidateMany(context.Background(), slices.Values(emails), nil) {
		if err != nil || res.Confidence.Status != emailcheck.StatusLikely {
			t.Fatalf("%s: %s, %v; want LIKELY", res.Email, res.Confidence.Status, err)
		}
	}
	st := v.ResolverStats()[0]
	t.Logf("%d queries, %d dropped; %+v", srv.Queries(), srv.Dropped(), st)
	if st.InFlight != 0 || st.Waiting != 0 || st.Window < 2 || st.Window > emailcheck.DefaultMaxInFlight {
		t.Errorf("after the burst: %+v", st)
	}
}
