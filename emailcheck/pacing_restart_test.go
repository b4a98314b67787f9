package emailcheck_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// watchWindow records the least window of v's first nameserver until
// the returned function is called, which returns it.
func watchWindow(v *emailcheck.Validator) func() int {
	least := v.ResolverStats()[0].Window
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				least = min(least, v.ResolverStats()[0].Window)
			}
		}
	})
	return func() int {
		close(stop)
		wg.Wait()
		return least
	}
}

// TestWarmWindowHealthyServerChanges checks a warm validator whose
// resolver still takes every query but answers differently than while
// the window grew: slower (busy upstream), or a burst smaller than the
// window followed by a trickle with a slow name. (A burst whose head
// alone waits on a slow upstream looks, by timing, like one whose head
// the server dropped: the window falls then, and grows back.) The server
// drops nothing, so the window must not collapse: it may fall from
// where a restarted flight begins (256) to twice the answers seen, when
// a busy machine holds one answer back long enough to look like a hole,
// but never below a quarter of that (64), where a window taken for a
// loss after loss would go. A trickle after a burst is no flight: it
// must not lower the window the burst left.
func TestWarmWindowHealthyServerChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of lookups per case")
	}
	cases := []struct {
		name string
		run  func(t *testing.T, v *emailcheck.Validator, srv *dnstest.Server) burstResult
	}{
		{name: "slower200ms", run: func(t *testing.T, v *emailcheck.Validator, srv *dnstest.Server) burstResult {
			srv.SetLatency(200 * time.Millisecond)
			return burst(v, "slower", 1000)
		}},
		{name: "smallburstthentrickle", run: func(t *testing.T, v *emailcheck.Validator, srv *dnstest.Server) burstResult {
			// A burst of sixty, then lookups one at a time, one of
			// them a name whose zone answers slowly.
			r := burst(v, "small", 60)
			left := v.ResolverStats()[0].Window
			least := watchWindow(v)
			for i := range 20 {
				prefix := "trickle"
				if i == 5 {
					prefix = "slowtrickle"
				}
				var wg sync.WaitGroup
				wg.Go(func() { burst(v, fmt.Sprintf("%s%d", prefix, i), 1) })
				time.Sleep(5 * time.Millisecond)
				if i == 5 {
					continue // the slow one goes on while the others come
				}
				wg.Wait()
			}
			time.Sleep(400 * time.Millisecond)
			if low := least(); low < left {
				t.Errorf("the trickle after the burst lowered the window from %d to %d", left, low)
			}
			return r
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := dnstest.Start(t, nil, pacingZone(300*time.Millisecond))
			v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			warmUp(t, v, "warm")
			time.Sleep(50 * time.Millisecond)
			srv.ResetCounts()
			least := watchWindow(v)
			start := time.Now()
			r := c.run(t, v, srv)
			low := least()
			st := v.ResolverStats()[0]
			t.Logf("RESULT %s: %v, %d not LIKELY %v, %d queries, %d dropped by the server; least window %d; stats %+v",
				c.name, time.Since(start).Round(time.Millisecond), r.notLikely, r.first, srv.Queries(), srv.Dropped(), low, st)
			if r.notLikely > 0 {
				t.Errorf("%d existing domains not LIKELY", r.notLikely)
			}
			if srv.Dropped() == 0 && (low < 64 || st.Window < 64) {
				t.Errorf("the window fell to %d (%d at the end) on a server that dropped nothing; want 64 at least", low, st.Window)
			}
		})
	}
}
