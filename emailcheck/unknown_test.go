package emailcheck_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// unknownProber never runs: an UNKNOWN address is not probed.
type unknownProber struct{ t *testing.T }

func (p unknownProber) ProbeMailbox(context.Context, emailcheck.ProbeRequest) emailcheck.SMTPResult {
	p.t.Error("an unjudged address was probed")
	return emailcheck.SMTPResult{}
}

// Unknown gives, without a query, the very result Validate gives when no
// nameserver answers (dns_timeout) or every one fails (dns_servfail):
// suggestion, provider, role, alias, score and source alike.
func TestUnknownIsValidatesUnknown(t *testing.T) {
	t.Parallel()
	emails := []string{
		"jane.doe+news@gmai.com", "info@dead.io", "bob@yahoo.con", "x@dead-provider.net",
		"john.smith+tag@gmail.com", "j.o.h.n@googlemail.com", "sales@outlook.com", "x@mailinator.com",
		"postmaster@bücher.de", "not an address", "a@[192.0.2.1]", "x@example.com", "x@blocked.org",
	}
	for _, tc := range []struct {
		name   string
		reason emailcheck.Reason
		dom    dnstest.Domain
	}{
		{"timeout", emailcheck.ReasonDNSTimeout, dnstest.Domain{Drop: true}},
		{"servfail", emailcheck.ReasonDNSServfail, dnstest.Domain{Rcode: dns.RcodeServerFailure}},
	} {
		for _, prober := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/prober %v", tc.name, prober), func(t *testing.T) {
				t.Parallel()
				// The canary's names under com, net and org are answered
				// (NXDOMAIN): the resolver itself resolves.
				srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
					return tc.dom, !strings.HasPrefix(name, "canary-")
				}})
				cfg := emailcheck.Config{
					Nameservers: []string{srv.Addr()}, QueryTimeout: failFast, Retries: -1,
					ImplicitMX: true, BlockDomains: []string{"blocked.org"}, Source: emailcheck.SourceAPI,
				}
				if prober {
					cfg.Prober = unknownProber{t}
				}
				v, err := emailcheck.New(&cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer v.Close()
				got := make([]emailcheck.Result, len(emails))
				for i, e := range emails {
					got[i] = v.Unknown(e, tc.reason, emailcheck.WithSource(emailcheck.SourceDashboard))
				}
				if got[2].DidYouMean == nil || !got[1].Confidence.IsRoleBased || got[1].Reason != tc.reason || !got[1].Validations.Syntax ||
					got[3].Confidence.Score != 40 || got[4].Confidence.CanonicalEmail == nil || got[9].Confidence.Status != emailcheck.StatusInvalidFormat {
					t.Fatalf("the fixture's addresses should get a suggestion, a role, the reason, a score of 40 and a bad syntax: %+v", got)
				}
				if n := srv.Queries(); n != 0 {
					t.Fatalf("Unknown asked the DNS %d questions", n)
				}
				for i, e := range emails {
					want, err := v.Validate(context.Background(), e, emailcheck.WithSource(emailcheck.SourceDashboard))
					if err != nil {
						t.Fatal(err)
					}
					want.Meta.LatencyMS = 0
					if g, w := string(got[i].AppendJSON(nil)), string(want.AppendJSON(nil)); g != w {
						t.Errorf("%s:\nUnknown  %s\nValidate %s", e, g, w)
					}
				}
				if r := v.Unknown("x@dead.io", tc.reason); r.Meta.Source != emailcheck.SourceAPI || r.Confidence.Status != emailcheck.StatusUnknown || r.Reason != tc.reason {
					t.Errorf("without options: %+v", r)
				}
			})
		}
	}
}
