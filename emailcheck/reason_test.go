package emailcheck_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// Every verdict carries the reason DNS and the lists gave for it.
func TestReasons(t *testing.T) {
	t.Parallel()
	mx := func(host string, addrs ...string) []dnstest.MX {
		return []dnstest.MX{{Pref: 10, Host: host, Addrs: addrs}}
	}
	const burnerAddr = "185.199.1.10"
	zone := dnstest.Zone{
		"good.com":             {MX: mx("mx.good.com")},
		"nodata.com":           {},
		"aonly.com":            {A: []string{"192.0.2.10"}},
		"nullmx.com":           {MX: []dnstest.MX{{Pref: 0, Host: "."}}},
		"localmx.com":          {MX: mx("localhost")},
		"missingmx.com":        {MX: []dnstest.MX{{Pref: 10, Host: "gone.missingmx.com", Missing: true}}},
		"privatemx.com":        {MX: mx("mx.privatemx.com", "10.1.2.3")},
		"servfail.com":         {Rcode: dns.RcodeServerFailure},
		"refused.com":          {Rcode: dns.RcodeRefused},
		"timeout.com":          {Drop: true},
		"hostfail.com":         {MX: mx("mx.hostfail.com")},
		"mx.hostfail.com":      {Rcode: dns.RcodeServerFailure},
		"mailinator.com":       {MX: mx("mail.mailinator.com")},
		"inbox.mailinator.com": {MX: mx("mail.mailinator.com")},
		"burner-front.com":     {MX: mx("mail2.mailinator.com")},
		"guerrillamail.com":    {MX: mx("mx.guerrillamail.com", burnerAddr)},
		"sharklasers.com":      {MX: mx("mx.sharklasers.com", burnerAddr)},
		"grr.la":               {MX: mx("mx.grr.la", burnerAddr)},
		"fresh-burner.xyz":     {MX: mx("mx.fresh-burner.xyz", burnerAddr)},
		"implicit-only.com":    {A: []string{"192.0.2.11"}},
		"xn--bcher-kva.de":     {MX: mx("mx.xn--bcher-kva.de")},
		"blocked.org":          {MX: mx("mx.blocked.org")},
	}
	srv := dnstest.Start(t, zone, nil)
	newV := func(cfg emailcheck.Config) *emailcheck.Validator {
		cfg.Nameservers = []string{srv.Addr()}
		cfg.QueryTimeout = 300 * time.Millisecond
		v, err := emailcheck.New(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		return v
	}
	v := newV(emailcheck.Config{BlockDomains: []string{"blocked.org"}})
	implicit := newV(emailcheck.Config{ImplicitMX: true, AllowAddressLiteral: true})
	private := newV(emailcheck.Config{AllowPrivateMX: true})
	for _, tc := range []struct {
		v      *emailcheck.Validator
		email  string
		status emailcheck.Status
		reason emailcheck.Reason
	}{
		{v, "jane@good.com", emailcheck.StatusLikely, emailcheck.ReasonValid},
		{v, "jane@bücher.de", emailcheck.StatusLikely, emailcheck.ReasonValid},
		{v, "jane@@good.com", emailcheck.StatusInvalidFormat, emailcheck.ReasonInvalidSyntax},
		{v, "", emailcheck.StatusInvalidFormat, emailcheck.ReasonInvalidSyntax},
		{v, "jane\x00@good.com", emailcheck.StatusInvalidFormat, emailcheck.ReasonInvalidSyntax},
		{v, "jane@example.com", emailcheck.StatusInvalid, emailcheck.ReasonReservedDomain},
		{v, "jane@mail.test", emailcheck.StatusInvalid, emailcheck.ReasonReservedDomain},
		{v, "jane@mail.blocked.org", emailcheck.StatusInvalid, emailcheck.ReasonBlockedDomain},
		{v, "jane@nx-nowhere.com", emailcheck.StatusInvalidDomain, emailcheck.ReasonNoSuchDomain},
		{v, "jane@servfail.com", emailcheck.StatusUnknown, emailcheck.ReasonDNSServfail},
		{v, "jane@refused.com", emailcheck.StatusUnknown, emailcheck.ReasonDNSServfail},
		{v, "jane@timeout.com", emailcheck.StatusUnknown, emailcheck.ReasonDNSTimeout},
		{v, "jane@hostfail.com", emailcheck.StatusUnknown, emailcheck.ReasonMXLookupFailed},
		{v, "jane@nodata.com", emailcheck.StatusNoMXRecords, emailcheck.ReasonNoMX},
		{v, "jane@aonly.com", emailcheck.StatusNoMXRecords, emailcheck.ReasonNoMX},
		{v, "jane@nullmx.com", emailcheck.StatusNoMXRecords, emailcheck.ReasonNullMX},
		{v, "jane@localmx.com", emailcheck.StatusNoMXRecords, emailcheck.ReasonMXInvalid},
		{v, "jane@missingmx.com", emailcheck.StatusNoMXRecords, emailcheck.ReasonMXUnresolvable},
		{v, "jane@privatemx.com", emailcheck.StatusNoMXRecords, emailcheck.ReasonMXPrivate},
		{private, "jane@privatemx.com", emailcheck.StatusLikely, emailcheck.ReasonValid},
		{v, "x@mailinator.com", emailcheck.StatusDisposable, emailcheck.ReasonDisposableList},
		{v, "x@inbox.mailinator.com", emailcheck.StatusDisposable, emailcheck.ReasonDisposableList},
		{v, "x@burner-front.com", emailcheck.StatusDisposable, emailcheck.ReasonDisposableMXHost},
		{implicit, "jane@implicit-only.com", emailcheck.StatusLikely, emailcheck.ReasonValid},
		{implicit, "jane@[192.0.2.1]", emailcheck.StatusInvalid, emailcheck.ReasonReservedDomain},
		{implicit, "jane@[8.8.8.8]", emailcheck.StatusLikely, emailcheck.ReasonValid},
	} {
		res, err := tc.v.Validate(context.Background(), tc.email)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != tc.status || res.Reason != tc.reason {
			t.Errorf("%q: %s %s, want %s %s", tc.email, res.Confidence.Status, res.Reason, tc.status, tc.reason)
		}
		if !slices.Contains(emailcheck.Reasons(), res.Reason) {
			t.Errorf("%q: reason %q is not in Reasons()", tc.email, res.Reason)
		}
	}

	// A domain on no list, at an address where three listed burners' MX
	// hosts live, once they have been seen.
	for _, e := range []string{"a@guerrillamail.com", "a@sharklasers.com", "a@grr.la"} {
		if _, err := v.Validate(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	res, err := v.Validate(context.Background(), "a@fresh-burner.xyz")
	if err != nil {
		t.Fatal(err)
	}
	if res.Confidence.Status != emailcheck.StatusDisposable || res.Reason != emailcheck.ReasonDisposableMX {
		t.Errorf("a learned burner: %s %s, want DISPOSABLE disposable_mx", res.Confidence.Status, res.Reason)
	}
}

// reasonProber is a MailboxProber from a function.
type reasonProber func(emailcheck.ProbeRequest) emailcheck.SMTPResult

func (f reasonProber) ProbeMailbox(_ context.Context, r emailcheck.ProbeRequest) emailcheck.SMTPResult {
	return f(r)
}

// A mailbox probe's answer gives the reason of the status it decides, and
// a server that puts the probe off is named.
func TestProbeReasons(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, dnstest.Zone{"good.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.good.com"}}}}, nil)
	yes, no := true, false
	code := func(n int) *int { return &n }
	answers := map[string]emailcheck.SMTPResult{
		"absent":   {Checked: true, Mailbox: emailcheck.MailboxAbsent, Code: code(550)},
		"catchall": {Checked: true, Mailbox: emailcheck.MailboxExists, CatchAll: &yes, Code: code(250)},
		"exists":   {Checked: true, Mailbox: emailcheck.MailboxExists, CatchAll: &no, Code: code(250)},
		"grey":     {Checked: true, Mailbox: emailcheck.MailboxUnknown, Code: code(451)},
		"policy":   {Checked: true, Mailbox: emailcheck.MailboxUnknown, Code: code(554)},
		"silent":   {Checked: false, Mailbox: emailcheck.MailboxUnknown},
	}
	v, err := emailcheck.New(&emailcheck.Config{
		Nameservers: []string{srv.Addr()},
		Prober: reasonProber(func(r emailcheck.ProbeRequest) emailcheck.SMTPResult {
			return answers[r.Address[:len(r.Address)-len("@good.com")]]
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for local, want := range map[string]struct {
		status emailcheck.Status
		reason emailcheck.Reason
	}{
		"absent":   {emailcheck.StatusUndeliverable, emailcheck.ReasonMailboxRejected},
		"catchall": {emailcheck.StatusCatchAll, emailcheck.ReasonCatchAll},
		"exists":   {emailcheck.StatusDeliverable, emailcheck.ReasonMailboxAccepted},
		"grey":     {emailcheck.StatusLikely, emailcheck.ReasonGreylisted},
		"policy":   {emailcheck.StatusLikely, emailcheck.ReasonValid},
		"silent":   {emailcheck.StatusLikely, emailcheck.ReasonValid},
	} {
		res, err := v.Validate(context.Background(), local+"@good.com")
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != want.status || res.Reason != want.reason {
			t.Errorf("%s: %s %s, want %s %s", local, res.Confidence.Status, res.Reason, want.status, want.reason)
		}
	}
}

// A lookup whose time runs out while it waits for a place in the
// nameserver's window, because nothing answers the queries ahead of it, is
// as unanswered as one whose own queries went unanswered: dns_timeout and
// ErrResolverUnreachable, never a server failure (which the job queue
// would take as final).
func TestLookupOutOfTimeInTheWindowIsUnanswered(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(string) (dnstest.Domain, bool) {
		return dnstest.Domain{Drop: true}, true
	}})
	v, err := emailcheck.New(&emailcheck.Config{
		Nameservers:  []string{srv.Addr()},
		QueryTimeout: 50 * time.Millisecond,
		Retries:      -1,
		MaxInFlight:  1, // one query at a time: the others wait their turn
		CacheSize:    -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	const n = 30
	var wg sync.WaitGroup
	errs := make([]error, n)
	results := make([]emailcheck.Result, n)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = v.Validate(context.Background(), fmt.Sprintf("jane@d%d.dropped.io", i), emailcheck.WithUnreachableError())
		})
	}
	wg.Wait()
	for i := range n {
		if !errors.Is(errs[i], emailcheck.ErrResolverUnreachable) || results[i].Reason != emailcheck.ReasonDNSTimeout {
			t.Errorf("d%d: %v, reason %q; want ErrResolverUnreachable and %q", i, errs[i], results[i].Reason, emailcheck.ReasonDNSTimeout)
		}
	}
}

// With ImplicitMX, a domain's addresses are asked for only when it has no
// MX: a domain with MX records costs one query, not three.
func TestImplicitMXAsksAddressesOnlyWithoutMX(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, dnstest.Zone{
		"withmx.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.withmx.com"}}, A: []string{"192.0.2.20"}},
		"aonly.com":  {A: []string{"192.0.2.21"}},
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, ImplicitMX: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, tc := range []struct {
		domain string
		want   emailcheck.Status
		addrQs int64
	}{
		{"withmx.com", emailcheck.StatusLikely, 0},
		{"aonly.com", emailcheck.StatusLikely, 2},
	} {
		res, err := v.Validate(context.Background(), "jane@"+tc.domain)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != tc.want {
			t.Errorf("%s: %s, want %s", tc.domain, res.Confidence.Status, tc.want)
		}
		if n := srv.QueryCount(tc.domain, dns.TypeA) + srv.QueryCount(tc.domain, dns.TypeAAAA); n != tc.addrQs {
			t.Errorf("%s: %d address queries, want %d", tc.domain, n, tc.addrQs)
		}
	}
}
