package emailcheck_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
			// backed off to the ceiling. On a loaded machine the answers
			// themselves take long and vary, and the RTO (SRTT plus four
			// times the variation) follows them.
			if st.RTO >= emailcheck.DefaultQueryTimeout || st.RTO >= emailcheck.DefaultQueryTimeout/2 && st.RTO >= 5*st.SRTT {
				t.Errorf("RTO %v after dead names' timeouts; want it from the answers (SRTT %v)", st.RTO, st.SRTT)
			}
			dead.Wait()
		})
	}
}

// Once a lookup under a zone timed out while the server answered others,
// the zone's other names are asked once each, never again after a
// timeout: a hundred names under it cost about one query each, not one
// per retry, and each is still UNKNOWN dns_timeout, the resolver
// unreachable for it.
func TestSilentZoneRemembered(t *testing.T) {
	srv := dnstest.Start(t, nil, &dnstest.Options{Latency: 5 * time.Millisecond, Fallback: liveAndDead})
	// A long FailureTTL keeps the zone remembered however slow the machine.
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, QueryTimeout: 300 * time.Millisecond, FailureTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	deadName := func(i int) {
		r, err := v.Validate(context.Background(), fmt.Sprintf("a@x%d.dead.io", i), emailcheck.WithUnreachableError())
		if !errors.Is(err, emailcheck.ErrResolverUnreachable) || r.Confidence.Status != emailcheck.StatusUnknown || r.Reason != emailcheck.ReasonDNSTimeout {
			t.Errorf("dead name %d: %s %s %v; want UNKNOWN dns_timeout, unreachable", i, r.Confidence.Status, r.Reason, err)
		}
	}
	// The first dead name, beside a live one, is retransmitted in vain.
	var wg sync.WaitGroup
	wg.Go(func() { v.Validate(context.Background(), "b@first.live.io") })
	deadName(0)
	wg.Wait()
	first := srv.QueryCount("x0.dead.io.", dns.TypeMX)
	const n = 100
	for i := 1; i <= n; i++ {
		wg.Go(func() { v.Validate(context.Background(), fmt.Sprintf("b@d%d.live.io", i)) })
		wg.Go(func() { deadName(i) })
	}
	wg.Wait()
	var queries int64
	for i := 1; i <= n; i++ {
		queries += srv.QueryCount(fmt.Sprintf("x%d.dead.io.", i), dns.TypeMX)
	}
	t.Logf("%d queries for the first dead name, %d for %d more under its zone", first, queries, n)
	if first != int64(emailcheck.DefaultRetries+1) {
		t.Errorf("%d queries for the first dead name; want %d", first, emailcheck.DefaultRetries+1)
	}
	if max := int64(n + 2*(emailcheck.DefaultRetries+1)); queries > max {
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

// A name under a zone whose other names go unanswered is still asked: a
// never-answered dead.gmail.com does not turn gmail.com UNKNOWN, neither
// while the dead name is retransmitted nor once its zone is remembered as
// unanswered.
func TestSilentSiblingSparesParent(t *testing.T) {
	srv := dnstest.Start(t, nil, &dnstest.Options{Latency: 5 * time.Millisecond, Fallback: func(name string) (dnstest.Domain, bool) {
		switch {
		case strings.HasPrefix(name, "dead") && strings.HasSuffix(name, ".gmail.com"):
			return dnstest.Domain{Drop: true}, true
		case name == "gmail.com", strings.HasSuffix(name, ".gmail.com"), strings.HasSuffix(name, ".live.io"):
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.provider.net"}}}, true
		}
		return dnstest.Domain{}, false
	}})
	// A long FailureTTL keeps the zone remembered however slow the machine.
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, QueryTimeout: 300 * time.Millisecond, FailureTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	check := func(when, email string) {
		t.Helper()
		if r, _ := v.Validate(ctx, email); r.Confidence.Status != emailcheck.StatusLikely {
			t.Errorf("%s: %s is %s %s; want LIKELY", when, email, r.Confidence.Status, r.Reason)
		}
	}
	// deadBeside validates a dead name under gmail.com, running live
	// once its first attempt timed out (it was sent again), so that the
	// server answers a question sent after it: the zone is silent.
	deadBeside := func(dead string, live func()) {
		var wg sync.WaitGroup
		wg.Go(func() {
			for srv.QueryCount(dead+".", dns.TypeMX) < 2 {
				time.Sleep(time.Millisecond)
			}
			live()
		})
		if r, _ := v.Validate(ctx, "x@"+dead); r.Confidence.Status != emailcheck.StatusUnknown || r.Reason != emailcheck.ReasonDNSTimeout {
			t.Errorf("%s: %s %s; want UNKNOWN dns_timeout", dead, r.Confidence.Status, r.Reason)
		}
		wg.Wait()
	}
	// A live name under the zone while the dead name is retransmitted.
	deadBeside("dead.gmail.com", func() { check("while the dead name is retransmitted", "victim@inbox.gmail.com") })
	// gmail.com itself once the zone is marked silent.
	deadBeside("dead2.gmail.com", func() { check("beside the dead name", "b@d1.live.io") })
	for i := range 3 {
		check("after the dead names", fmt.Sprintf("victim%d@gmail.com", i))
	}
	if n := srv.QueryCount("gmail.com.", dns.TypeMX); n != 1 {
		t.Errorf("gmail.com MX asked %d times; want once", n)
	}
}

// The canary asks about fixed zones, not those of the addresses
// validated: zones whose servers answer their MX but SERVFAIL any other
// name do not make it fail, and a domain's own SERVFAIL is then not the
// resolver's. A zone configured in CanaryZones that always fails does.
func TestCanaryAsksFixedZones(t *testing.T) {
	var mu sync.Mutex
	var canaries []string
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		if strings.HasPrefix(name, "canary-") {
			mu.Lock()
			canaries = append(canaries, name)
			mu.Unlock()
		}
		switch {
		case strings.HasPrefix(name, "att") && strings.HasSuffix(name, ".io"), strings.HasPrefix(name, "live"):
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.provider.net"}}}, true
		case strings.Contains(name, ".att"), name == "sf.io", strings.HasSuffix(name, ".broken.example"):
			return dnstest.Domain{Rcode: dns.RcodeServerFailure}, true
		}
		return dnstest.Domain{}, false
	}})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	for _, d := range []string{"live1.io", "att1.io", "att2.io", "att3.io"} {
		if r, _ := v.Validate(ctx, "a@"+d); r.Confidence.Status != emailcheck.StatusLikely {
			t.Fatalf("%s: %s", d, r.Confidence.Status)
		}
	}
	if err := v.PingNameservers(ctx); err != nil {
		t.Errorf("canary after zones that SERVFAIL unknown names: %v", err)
	}
	r, err := v.Validate(ctx, "a@sf.io", emailcheck.WithUnreachableError())
	if errors.Is(err, emailcheck.ErrResolverUnreachable) || r.Reason != emailcheck.ReasonDNSServfail {
		t.Errorf("sf.io: %s %s, %v; want the domain's own SERVFAIL", r.Confidence.Status, r.Reason, err)
	}
	mu.Lock()
	for _, name := range canaries {
		if i := strings.IndexByte(name, '.'); !slices.Contains([]string{"com", "net", "org"}, name[i+1:]) {
			t.Errorf("canary question %s; want one under com, net or org", name)
		}
	}
	if len(canaries) == 0 {
		t.Errorf("no canary question asked")
	}
	mu.Unlock()

	v2, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, CanaryZones: []string{"broken.example."}, QueryTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if err := v2.PingNameservers(ctx); !errors.Is(err, emailcheck.ErrNameserversDown) {
		t.Errorf("canary under a configured zone that SERVFAILs: %v; want ErrNameserversDown", err)
	}
	if _, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, CanaryZones: []string{"bad zone"}}); !errors.Is(err, emailcheck.ErrConfig) {
		t.Errorf("CanaryZones entry \"bad zone\": %v; want ErrConfig", err)
	}
}
