package emailcheck_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// liveAndDead answers names under live.io and drops those under the
// dead*.io zones, as a recursive resolver waiting on dead servers.
func liveAndDead(name string) (dnstest.Domain, bool) {
	switch {
	case strings.HasSuffix(name, ".live.io"):
		return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.provider.net"}}}, true
	case strings.Contains(name, ".dead"):
		return dnstest.Domain{Drop: true}, true
	}
	return dnstest.Domain{}, false
}

// runLive validates n live addresses at once and returns how long they
// took and how many were not LIKELY.
func runLive(v *emailcheck.Validator, n int) (time.Duration, int) {
	start := time.Now()
	var bad atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, _ := v.Validate(context.Background(), fmt.Sprintf("b@d%d.live.io", i))
			if r.Confidence.Status != emailcheck.StatusLikely {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	return time.Since(start), int(bad.Load())
}

// A thousand lookups of dead names, under a few zones, delay no live
// lookup much and turn none UNKNOWN; the RTO stays that of the answers.
func TestDeadZonesStallNoOne(t *testing.T) {
	for _, names := range []int{1, 1000} {
		t.Run(fmt.Sprint(names, " names"), func(t *testing.T) {
			opts := &dnstest.Options{Latency: 20 * time.Millisecond, Fallback: liveAndDead}
			alone, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{dnstest.Start(t, nil, opts).Addr()}, AllowPrivateMX: true})
			if err != nil {
				t.Fatal(err)
			}
			base, bad := runLive(alone, 1000)
			alone.Close()
			if bad != 0 {
				t.Fatalf("%d of 1000 live lookups not LIKELY alone", bad)
			}

			v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{dnstest.Start(t, nil, opts).Addr()}, AllowPrivateMX: true})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			var dead sync.WaitGroup
			for i := range 1000 {
				dead.Go(func() {
					v.Validate(context.Background(), fmt.Sprintf("a@x%d.dead%d.io", i%names, i%3))
				})
			}
			time.Sleep(200 * time.Millisecond)
			took, bad := runLive(v, 1000)
			st := v.ResolverStats()[0]
			t.Logf("live alone %v, beside 1000 dead lookups %v; %+v", base, took, st)
			if bad != 0 {
				t.Errorf("%d of 1000 live lookups not LIKELY beside dead ones", bad)
			}
			if took > 4*base+time.Second {
				t.Errorf("live lookups took %v beside dead ones, %v alone", took, base)
			}
			// Only the dead names timed out: the server's RTO was never
			// backed off to the ceiling.
			if st.RTO >= emailcheck.DefaultQueryTimeout/2 {
				t.Errorf("RTO %v after dead names' timeouts; want it from the answers (SRTT %v)", st.RTO, st.SRTT)
			}
			dead.Wait()
		})
	}
}

// Once a lookup under a zone timed out while the server answered others,
// the zone's other names are answered at once as unanswered: a hundred
// names under it cost about one name's queries.
func TestSilentZoneRemembered(t *testing.T) {
	srv := dnstest.Start(t, nil, &dnstest.Options{Latency: 5 * time.Millisecond, Fallback: liveAndDead})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, QueryTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	const n = 100
	for i := range n {
		var wg sync.WaitGroup
		wg.Go(func() { v.Validate(context.Background(), fmt.Sprintf("b@d%d.live.io", i)) })
		r, err := v.Validate(context.Background(), fmt.Sprintf("a@x%d.dead.io", i), emailcheck.WithUnreachableError())
		wg.Wait()
		if !errors.Is(err, emailcheck.ErrResolverUnreachable) || r.Confidence.Status != emailcheck.StatusUnknown || r.Reason != emailcheck.ReasonDNSTimeout {
			t.Fatalf("dead name %d: %s %s %v; want UNKNOWN dns_timeout, unreachable", i, r.Confidence.Status, r.Reason, err)
		}
	}
	var queries int64
	for i := range n {
		queries += srv.QueryCount(fmt.Sprintf("x%d.dead.io.", i), dns.TypeMX)
	}
	t.Logf("%d queries for %d names under one dead zone", queries, n)
	if max := int64(2 * (emailcheck.DefaultRetries + 1)); queries > max {
		t.Errorf("%d queries for %d names under one dead zone; want at most %d", queries, n, max)
	}
}

// A resolver that answers the root from its cache but SERVFAILs every
// other name (cut off upstream) fails the canary, and its SERVFAILs are
// reported as no answer; once it resolves again the canary passes.
func TestCanaryDetectsResolverCutOff(t *testing.T) {
	var cut atomic.Bool
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		if cut.Load() && name != "" {
			return dnstest.Domain{Rcode: dns.RcodeServerFailure}, true
		}
		return liveAndDead(name)
	}})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, QueryTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	if r, _ := v.Validate(ctx, "a@one.live.io"); r.Confidence.Status != emailcheck.StatusLikely {
		t.Fatalf("before the cut: %s", r.Confidence.Status)
	}
	if err := v.PingNameservers(ctx); err != nil {
		t.Fatalf("canary before the cut: %v", err)
	}
	cut.Store(true)
	if err := v.PingNameservers(ctx); !errors.Is(err, emailcheck.ErrNameserversDown) {
		t.Fatalf("canary while the resolver is cut off: %v; want ErrNameserversDown", err)
	}
	r, err := v.Validate(ctx, "a@two.live.io", emailcheck.WithUnreachableError())
	if !errors.Is(err, emailcheck.ErrResolverUnreachable) || r.Confidence.Status != emailcheck.StatusUnknown {
		t.Fatalf("lookup while cut off: %s, %v; want UNKNOWN, ErrResolverUnreachable", r.Confidence.Status, err)
	}
	cut.Store(false)
	if err := v.PingNameservers(ctx); err != nil {
		t.Fatalf("canary after the cut: %v", err)
	}
}
