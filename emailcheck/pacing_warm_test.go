package emailcheck_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// burstResult is what one burst of lookups came to.
type burstResult struct {
	notLikely, timeouts int64
	first               []string
	lost                []string // the first domains not LIKELY
	took                time.Duration
}

// burst validates n addresses at new domains under .pace, all at once (a
// goroutine each, as a service's callers do), tagged so that no two
// bursts share a domain.
func burst(v *emailcheck.Validator, tag string, n int) burstResult {
	var r burstResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			res, err := v.Validate(context.Background(), fmt.Sprintf("u@%s-%d.pace", tag, i))
			if err == nil && res.Confidence.Status == emailcheck.StatusLikely {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			r.notLikely++
			if res.Reason == emailcheck.ReasonDNSTimeout {
				r.timeouts++
			}
			if len(r.lost) < 5 {
				r.lost = append(r.lost, fmt.Sprintf("%s-%d.pace", tag, i))
			}
			if len(r.first) < 3 {
				r.first = append(r.first, fmt.Sprintf("%s: %s %s %v", res.Email, res.Confidence.Status, res.Reason, err))
			}
		})
	}
	wg.Wait()
	r.took = time.Since(start)
	return r
}

// warmUp sends bursts of a thousand to a healthy server until the
// validator's window reached half of MaxInFlight at least, as a service
// that has run a while keeps it.
func warmUp(t *testing.T, v *emailcheck.Validator, tag string) {
	t.Helper()
	for round := range 10 {
		r := burst(v, fmt.Sprintf("%s%d", tag, round), 1000)
		if r.notLikely > 0 {
			t.Fatalf("warm-up burst on a healthy server: %d not LIKELY %v", r.notLikely, r.first)
		}
		if st := v.ResolverStats(); st[0].Window >= emailcheck.DefaultMaxInFlight/2 {
			t.Logf("warm after %d bursts (%v the last): %+v", round+1, r.took.Round(time.Millisecond), st[0])
			return
		}
	}
	t.Skipf("the window never grew past %d: %+v", emailcheck.DefaultMaxInFlight/2, v.ResolverStats())
}

// TestWarmWindowCapacityDrop checks a validator whose window grew to
// MaxInFlight on a healthy resolver, when that resolver then takes far
// fewer queries (it got busy and bounds its queue, or restarted with a
// small receive buffer) and a new burst of a thousand domains arrives:
// the window kept from the healthy days must not cost a name its answer.
// Every existing domain must end LIKELY.
func TestWarmWindowCapacityDrop(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of lookups per case")
	}
	type warmCase struct {
		name     string
		timeout  time.Duration // QueryTimeout; 0 for the default
		idle     time.Duration // between the warm-up and the drop
		drop     func(srv *dnstest.Server)
		restarts bool // the drop is a restart: the port refuses a moment
		cold     bool // no warm-up: the same burst to a new validator
	}
	pending64 := func(srv *dnstest.Server) { srv.SetMaxPending(64) }
	readbuf := func(srv *dnstest.Server) {
		if err := srv.SetReadBuffer(4096); err != nil {
			panic(err)
		}
	}
	cases := []warmCase{
		{name: "pending64", drop: pending64},
		{name: "pending64timeout10s", timeout: 10 * time.Second, drop: pending64},
		{name: "pending64idle3s", idle: 3 * time.Second, drop: pending64},
		{name: "readbuf4096", drop: readbuf},
		{name: "restartreadbuf4096", drop: readbuf, restarts: true},
		{name: "coldpending64", drop: pending64, cold: true},
		{name: "coldreadbuf4096", drop: readbuf, cold: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := dnstest.Start(t, nil, pacingZone(0))
			cfg := emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, QueryTimeout: c.timeout}
			v, err := emailcheck.New(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if !c.cold {
				warmUp(t, v, "warm")
			}
			time.Sleep(c.idle)
			if c.restarts {
				if err := srv.SetRefusing(true); err != nil {
					t.Fatal(err)
				}
			}
			c.drop(srv)
			if c.restarts {
				if err := srv.SetRefusing(false); err != nil {
					t.Fatal(err)
				}
			}
			srv.ResetCounts()
			r := burst(v, "after", 1000)
			t.Logf("RESULT %s: %v, %d not LIKELY (%d dns_timeout) %v, %d queries, %d dropped by the server; stats %+v",
				c.name, r.took.Round(time.Millisecond), r.notLikely, r.timeouts, r.first, srv.Queries(), srv.Dropped(), v.ResolverStats())
			for _, d := range r.lost {
				t.Logf("lost %s: MX asked %d times, its host's A %d times", d, srv.QueryCount(d, dns.TypeMX), srv.QueryCount("mx."+d, dns.TypeA))
			}
			if r.notLikely > 0 {
				t.Errorf("%d existing domains not LIKELY (%d dns_timeout) after the resolver's capacity dropped under a warm window", r.notLikely, r.timeouts)
			}
		})
	}
}

// TestWarmWindowsSharedResolver checks two validators (two instances of
// a service) sharing one resolver, both warm, that each send a burst of
// a thousand at the same moment, once on the healthy resolver and once
// after it bounded its queue: every existing domain must end LIKELY.
func TestWarmWindowsSharedResolver(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of lookups")
	}
	for _, c := range []struct {
		pending int
		cold    bool
	}{{0, false}, {64, false}, {64, true}} {
		pending := c.pending
		name := fmt.Sprintf("pending%d", pending)
		if c.cold {
			name = "cold" + name
		}
		t.Run(name, func(t *testing.T) {
			srv := dnstest.Start(t, nil, pacingZone(0))
			var vs [2]*emailcheck.Validator
			for i := range vs {
				v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true})
				if err != nil {
					t.Fatal(err)
				}
				defer v.Close()
				if !c.cold {
					warmUp(t, v, fmt.Sprintf("warm%d-", i))
				}
				vs[i] = v
			}
			srv.SetMaxPending(pending)
			srv.ResetCounts()
			var lost, timeouts atomic.Int64
			var wg sync.WaitGroup
			for i, v := range vs {
				wg.Go(func() {
					r := burst(v, fmt.Sprintf("both%d", i), 1000)
					lost.Add(r.notLikely)
					timeouts.Add(r.timeouts)
					t.Logf("RESULT validator %d: %v, %d not LIKELY (%d dns_timeout) %v; stats %+v",
						i, r.took.Round(time.Millisecond), r.notLikely, r.timeouts, r.first, v.ResolverStats())
				})
			}
			wg.Wait()
			t.Logf("%d queries, %d dropped by the server", srv.Queries(), srv.Dropped())
			if lost.Load() > 0 {
				t.Errorf("%d existing domains not LIKELY (%d dns_timeout) with two warm validators bursting at once", lost.Load(), timeouts.Load())
			}
		})
	}
}
