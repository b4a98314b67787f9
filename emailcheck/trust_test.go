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

// A resolver whose port refuses (it restarts) for 2 s in the middle of
// 1,000 lookups costs them a wait, not their verdicts: the lookups in
// flight wait for it and are answered once it listens again.
func TestRestartingResolverCostsNoVerdict(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, nil, &dnstest.Options{Latency: 5 * time.Millisecond, Fallback: liveAndDead})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	const n = 1000
	results := make(chan emailcheck.Result, n)
	started := make(chan struct{})
	go func() {
		for i := range n {
			if i == n/4 {
				close(started)
			}
			go func() {
				res, err := v.Validate(ctx, fmt.Sprintf("user%d@d%d.live.io", i, i))
				if err != nil {
					res.Confidence.Status = emailcheck.Status("error: " + err.Error())
				}
				results <- res
			}()
		}
	}()
	<-started
	if err := srv.SetRefusing(true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := srv.SetRefusing(false); err != nil {
		t.Fatal(err)
	}
	bad := map[emailcheck.Status]int{}
	for range n {
		if res := <-results; res.Confidence.Status != emailcheck.StatusLikely {
			bad[res.Confidence.Status+emailcheck.Status(" "+string(res.Reason))]++
		}
	}
	if len(bad) > 0 {
		t.Errorf("lookups across a 2 s refusal: %v not LIKELY; want every one LIKELY", bad)
	}
}

// A nameserver that keeps refusing is down, not restarting: once it has
// refused for longer than the wait a restart is given, lookups fail at
// once instead of each waiting it out.
func TestRefusingResolverFailsFastOnceDown(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: liveAndDead})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: time.Second, AllowPrivateMX: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := srv.SetRefusing(true); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The first lookups wait out the patience (twice QueryTimeout, 2 s);
	// once it has passed, a lookup fails within a fraction of it.
	if res, _ := v.Validate(ctx, "a@d1.live.io"); res.Confidence.Status != emailcheck.StatusUnknown {
		t.Fatalf("with the server refusing: %s", res.Confidence.Status)
	}
	start := time.Now()
	res, _ := v.Validate(ctx, "b@d2.live.io")
	if took := time.Since(start); res.Confidence.Status != emailcheck.StatusUnknown || took > time.Second {
		t.Errorf("a lookup once the server is known down: %s after %v; want UNKNOWN at once", res.Confidence.Status, took)
	}
	if err := srv.SetRefusing(false); err != nil {
		t.Fatal(err)
	}
	// It answers again: the canary's ping, or any answer, ends the
	// refusal, and lookups wait for it again.
	if err := v.PingNameservers(ctx); err != nil {
		t.Fatal(err)
	}
	if res, _ := v.Validate(ctx, "c@d3.live.io"); res.Confidence.Status != emailcheck.StatusLikely {
		t.Errorf("after the server came back: %s", res.Confidence.Status)
	}
}
