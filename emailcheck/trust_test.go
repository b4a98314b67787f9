package emailcheck_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// A resolver that answers NXDOMAIN to every question, the root's and the
// top-level domains' included, and without an SOA: no address is judged
// INVALID_DOMAIN on its word; each is UNKNOWN with its own reason. When
// it answers truthfully again, the verdicts come back within the check
// interval.
func TestLyingResolverCondemnsNoOne(t *testing.T) {
	t.Parallel()
	const every = 300 * time.Millisecond
	b := setup(t, emailcheck.Config{TrustCheckInterval: every, FailureTTL: -1, CacheSize: -1})
	ctx := context.Background()
	b.srv.SetLying(true)
	for _, email := range []string{"jane.doe@gmail.com", "jane@good.com", "x@nx-nowhere.com"} {
		res, err := b.v.Validate(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		if res.Confidence.Status != emailcheck.StatusUnknown || res.Reason != emailcheck.ReasonDNSUntrusted {
			t.Errorf("%s from a lying resolver: %s %s; want UNKNOWN %s", email, res.Confidence.Status, res.Reason, emailcheck.ReasonDNSUntrusted)
		}
	}
	if err := b.v.PingNameservers(ctx); !errors.Is(err, emailcheck.ErrResolverUntrusted) {
		t.Errorf("PingNameservers of a lying resolver: %v, want ErrResolverUntrusted", err)
	}
	if s := b.v.TrustState(); s != "untrusted" {
		t.Errorf("trust state %q, want untrusted", s)
	}

	b.srv.SetLying(false)
	// Within the check interval (and a margin for a loaded machine), the
	// honest answers count again.
	deadline := time.Now().Add(every + 30*time.Second)
	for {
		good, err1 := b.v.Validate(ctx, "jane@good.com")
		gone, err2 := b.v.Validate(ctx, "x@nx-nowhere.com")
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if good.Confidence.Status == emailcheck.StatusLikely && gone.Confidence.Status == emailcheck.StatusInvalidDomain {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the resolver recovered: %s and %s; want LIKELY and INVALID_DOMAIN", good.Confidence.Status, gone.Confidence.Status)
		}
		time.Sleep(every / 4)
	}
	if s := b.v.TrustState(); s != "trusted" {
		t.Errorf("trust state %q after recovery, want trusted", s)
	}
}

// A resolver that denies a top-level domain, though its NXDOMAINs carry
// an SOA, is not believed either; an honest one is.
func TestNXDomainNeedsTrustedResolver(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		deny  bool
		want  emailcheck.Status
		other emailcheck.Reason
	}{
		{"honest", false, emailcheck.StatusInvalidDomain, emailcheck.ReasonNoSuchDomain},
		{"denies com", true, emailcheck.StatusUnknown, emailcheck.ReasonDNSUntrusted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, emailcheck.Config{})
			if tt.deny {
				b.srv.Set("com", dnstest.Domain{Rcode: dns.RcodeNameError})
			}
			res, err := b.v.Validate(context.Background(), "x@nx-nowhere.com")
			if err != nil {
				t.Fatal(err)
			}
			if res.Confidence.Status != tt.want || res.Reason != tt.other {
				t.Errorf("got %s %s, want %s %s", res.Confidence.Status, res.Reason, tt.want, tt.other)
			}
		})
	}
}
