package emailcheck_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// mxHostZone declares MX hosts with and without addresses.
func mxHostZone() dnstest.Zone {
	mx := func(hosts ...dnstest.MX) dnstest.Domain { return dnstest.Domain{MX: hosts} }
	return dnstest.Zone{
		"public.mxtest.io":          mx(dnstest.MX{Pref: 10, Host: "mx.public.mxtest.io"}),
		"v6only.mxtest.io":          mx(dnstest.MX{Pref: 10, Host: "mx.v6only.mxtest.io", Addrs: []string{"2a00:1450:4001::1b"}}),
		"missinghost.mxtest.io":     mx(dnstest.MX{Pref: 10, Host: "mx.missinghost.mxtest.io", Missing: true}),
		"noaddr.mxtest.io":          mx(dnstest.MX{Pref: 10, Host: "mx.noaddr.mxtest.io"}),
		"mx.noaddr.mxtest.io":       {}, // the host exists, with neither A nor AAAA
		"fallback.mxtest.io":        mx(dnstest.MX{Pref: 10, Host: "gone.fallback.mxtest.io", Missing: true}, dnstest.MX{Pref: 20, Host: "mx2.fallback.mxtest.io"}),
		"failing.mxtest.io":         mx(dnstest.MX{Pref: 10, Host: "mx.failing.mxtest.io"}),
		"mx.failing.mxtest.io":      {Rcode: dns.RcodeServerFailure},
		"failmissing.mxtest.io":     mx(dnstest.MX{Pref: 10, Host: "mx.failing.mxtest.io"}, dnstest.MX{Pref: 20, Host: "none.failmissing.mxtest.io", Missing: true}),
		"failok.mxtest.io":          mx(dnstest.MX{Pref: 10, Host: "mx.failing.mxtest.io"}, dnstest.MX{Pref: 20, Host: "mx.public.mxtest.io"}),
		"loopback.mxtest.io":        mx(dnstest.MX{Pref: 10, Host: "mx.loopback.mxtest.io", Addrs: []string{"127.0.0.1"}}),
		"private.mxtest.io":         mx(dnstest.MX{Pref: 10, Host: "mx.private.mxtest.io", Addrs: []string{"10.1.2.3", "fd00::25"}}),
		"docrange.mxtest.io":        mx(dnstest.MX{Pref: 10, Host: "mx.docrange.mxtest.io", Addrs: []string{"192.0.2.25"}}),
		"zero.mxtest.io":            mx(dnstest.MX{Pref: 10, Host: "mx.zero.mxtest.io", Addrs: []string{"0.0.0.0"}}),
		"mixed.mxtest.io":           mx(dnstest.MX{Pref: 10, Host: "mx.mixed.mxtest.io", Addrs: []string{"10.0.0.1", "93.184.216.34"}}),
		"cnamehost.mxtest.io":       mx(dnstest.MX{Pref: 10, Host: "alias.cnamehost.mxtest.io"}),
		"alias.cnamehost.mxtest.io": {CNAME: "mx.public.mxtest.io"},
		// IPv6 forms carrying a loopback or private IPv4 address.
		"nat64.mxtest.io":       mx(dnstest.MX{Pref: 10, Host: "mx.nat64.mxtest.io", Addrs: []string{"64:ff9b::7f00:1"}}),
		"nat64local.mxtest.io":  mx(dnstest.MX{Pref: 10, Host: "mx.nat64local.mxtest.io", Addrs: []string{"64:ff9b:1::a01:203"}}),
		"sixtofour.mxtest.io":   mx(dnstest.MX{Pref: 10, Host: "mx.sixtofour.mxtest.io", Addrs: []string{"2002:a01:203::1"}}),
		"compatible.mxtest.io":  mx(dnstest.MX{Pref: 10, Host: "mx.compatible.mxtest.io", Addrs: []string{"::127.0.0.1"}}),
		"teredo.mxtest.io":      mx(dnstest.MX{Pref: 10, Host: "mx.teredo.mxtest.io", Addrs: []string{"2001:0:4136:e378:8000:63bf:80ff:fffe"}}),
		"cgnat.mxtest.io":       mx(dnstest.MX{Pref: 10, Host: "mx.cgnat.mxtest.io", Addrs: []string{"100.64.0.25"}}),
		"nat64public.mxtest.io": mx(dnstest.MX{Pref: 10, Host: "mx.nat64public.mxtest.io", Addrs: []string{"64:ff9b::5db8:d822"}}), // 93.184.216.34
	}
}

func TestMXHostsMustResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		domain       string
		allowPrivate bool
		status       emailcheck.Status
		mx           bool
	}{
		{"public.mxtest.io", false, emailcheck.StatusLikely, true},
		{"v6only.mxtest.io", false, emailcheck.StatusLikely, true},
		{"missinghost.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"noaddr.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"fallback.mxtest.io", false, emailcheck.StatusLikely, true},
		{"failing.mxtest.io", false, emailcheck.StatusUnknown, false},
		{"failmissing.mxtest.io", false, emailcheck.StatusUnknown, false},
		{"failok.mxtest.io", false, emailcheck.StatusLikely, true},
		{"loopback.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"loopback.mxtest.io", true, emailcheck.StatusLikely, true},
		{"private.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"private.mxtest.io", true, emailcheck.StatusLikely, true},
		{"docrange.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"zero.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"mixed.mxtest.io", false, emailcheck.StatusLikely, true},
		{"cnamehost.mxtest.io", false, emailcheck.StatusLikely, true},
		{"nat64.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"nat64local.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"sixtofour.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"compatible.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"teredo.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"cgnat.mxtest.io", false, emailcheck.StatusNoMXRecords, false},
		{"nat64public.mxtest.io", false, emailcheck.StatusLikely, true},
		{"nat64.mxtest.io", true, emailcheck.StatusLikely, true},
	}
	srv := dnstest.Start(t, mxHostZone(), nil)
	validators := map[bool]*emailcheck.Validator{}
	for _, allow := range []bool{false, true} {
		v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: testQueryTimeout, AllowPrivateMX: allow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		validators[allow] = v
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/private=%v", tt.domain, tt.allowPrivate), func(t *testing.T) {
			res, err := validators[tt.allowPrivate].Validate(context.Background(), "jane@"+tt.domain)
			if err != nil {
				t.Fatal(err)
			}
			if res.Confidence.Status != tt.status || res.Validations.MXRecords != tt.mx || !res.Validations.DomainExists {
				t.Errorf("status %s, mx_records %v, domain_exists %v; want %s, %v, true",
					res.Confidence.Status, res.Validations.MXRecords, res.Validations.DomainExists, tt.status, tt.mx)
			}
			checkScoreConsistent(t, res)
		})
	}
}

// Hosts are resolved in preference order and the lookups stop at the first
// that resolves; a host shared by many domains is looked up once.
func TestMXHostLookupsShared(t *testing.T) {
	t.Parallel()
	zone := dnstest.Zone{}
	for i := range 100 {
		zone[fmt.Sprintf("d%d.mxtest.io", i)] = dnstest.Domain{MX: []dnstest.MX{
			{Pref: 10, Host: "aspmx.l.google.com"}, {Pref: 20, Host: "alt1.aspmx.l.google.com"},
		}}
	}
	srv := dnstest.Start(t, zone, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for i := range 100 {
		res, err := v.Validate(context.Background(), fmt.Sprintf("u@d%d.mxtest.io", i))
		if err != nil || res.Confidence.Status != emailcheck.StatusLikely {
			t.Fatalf("d%d: %s, %v", i, res.Confidence.Status, err)
		}
	}
	// One lookup, whose query is sent again only if its answer comes
	// after the RTO.
	if n := srv.QueryCount("aspmx.l.google.com", dns.TypeA); n < 1 || n > 1+emailcheck.DefaultRetries {
		t.Errorf("the shared host was asked for A %d times, want one lookup", n)
	}
	if n := srv.QueryCount("alt1.aspmx.l.google.com", dns.TypeA); n != 0 {
		t.Errorf("the second host was asked %d times though the first resolved", n)
	}
}

// A host's failure is cached briefly, not for the host's TTL: once the
// host answers again the domain becomes LIKELY.
func TestMXHostFailureNotCachedLong(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, dnstest.Zone{
		"flaky.mxtest.io":    {MX: []dnstest.MX{{Pref: 10, Host: "mx.flaky.mxtest.io"}}},
		"mx.flaky.mxtest.io": {Rcode: dns.RcodeServerFailure},
	}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: testQueryTimeout, FailureTTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	res, _ := v.Validate(context.Background(), "a@flaky.mxtest.io")
	if res.Confidence.Status != emailcheck.StatusUnknown {
		t.Fatalf("while the host fails: %s, want UNKNOWN", res.Confidence.Status)
	}
	srv.Set("mx.flaky.mxtest.io", dnstest.Domain{A: []string{dnstest.DefaultMXAddr}})
	waitFor(t, func() bool {
		res, err := v.Validate(context.Background(), "a@flaky.mxtest.io")
		return err == nil && res.Confidence.Status == emailcheck.StatusLikely
	}, "LIKELY after the host recovered")
}

// A DNS outage (no nameserver answers) is an error under
// WithUnreachableError, while a name's own SERVFAIL stays an UNKNOWN
// result; without the option both are results.
func TestUnreachableError(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, dnstest.Zone{"broken.mxtest.io": {Rcode: dns.RcodeServerFailure}}, nil)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 100 * time.Millisecond, FailureTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	res, err := v.Validate(ctx, "a@broken.mxtest.io", emailcheck.WithUnreachableError())
	if err != nil || res.Confidence.Status != emailcheck.StatusUnknown {
		t.Fatalf("SERVFAIL: %s, %v; want an UNKNOWN result", res.Confidence.Status, err)
	}
	srv.Close()
	withErr, err := v.Validate(ctx, "a@gone.mxtest.io", emailcheck.WithUnreachableError())
	if !errors.Is(err, emailcheck.ErrResolverUnreachable) {
		t.Fatalf("no server: %v, want ErrResolverUnreachable", err)
	}
	res, err = v.Validate(ctx, "a@gone.mxtest.io")
	if err != nil || res.Confidence.Status != emailcheck.StatusUnknown {
		t.Fatalf("no server, no option: %s, %v; want an UNKNOWN result", res.Confidence.Status, err)
	}
	// The error comes with the very result given without the option.
	withErr.Meta.LatencyMS, res.Meta.LatencyMS = 0, 0
	if a, b := string(withErr.AppendJSON(nil)), string(res.AppendJSON(nil)); a != b || !res.Validations.Syntax {
		t.Fatalf("result with the error:\n%s\nwithout the option:\n%s", a, b)
	}
	if err := v.PingNameservers(ctx); !errors.Is(err, emailcheck.ErrNameserversDown) {
		t.Fatalf("PingNameservers with the server down: %v", err)
	}
}
