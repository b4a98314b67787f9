package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/store/ratelimit"
)

// Harness opens the limiters under test.
type Harness struct {
	// New returns two limiters over one new, empty store: two instances
	// of one deployment, sharing every bucket and counter. A limiter
	// that lives in one process returns itself twice.
	New func(t *testing.T) (a, b ratelimit.Limiter)
}

// Run runs the suite: the single-bucket tests on every limiter, and the
// [ratelimit.MultiLimiter] and [ratelimit.Counter] tests on the limiters
// that implement them.
func Run(t *testing.T, h Harness) {
	one := func(t *testing.T) ratelimit.Limiter { a, _ := h.New(t); return a }
	t.Run("Bucket", func(t *testing.T) { t.Parallel(); testBucket(t, one(t)) })
	t.Run("Refills", func(t *testing.T) { t.Parallel(); testRefills(t, one(t)) })
	t.Run("Limits", func(t *testing.T) { t.Parallel(); testLimits(t, one(t)) })
	t.Run("TwoInstances", func(t *testing.T) { t.Parallel(); testTwoInstances(t, h) })

	probe, _ := h.New(t)
	if _, ok := probe.(ratelimit.MultiLimiter); ok {
		t.Run("Multi", func(t *testing.T) {
			RunMulti(t, func(t *testing.T) ratelimit.MultiLimiter { return one(t).(ratelimit.MultiLimiter) })
		})
		t.Run("MultiTwoInstances", func(t *testing.T) { t.Parallel(); testMultiTwoInstances(t, h) })
	}
	if _, ok := probe.(ratelimit.Counter); ok {
		counter := func(t *testing.T) ratelimit.Counter { return one(t).(ratelimit.Counter) }
		t.Run("Quota", func(t *testing.T) { t.Parallel(); testQuota(t, counter(t)) })
		t.Run("QuotaRefund", func(t *testing.T) { t.Parallel(); testQuotaRefund(t, counter(t)) })
		t.Run("QuotaWindowEnds", func(t *testing.T) { t.Parallel(); testQuotaWindowEnds(t, counter(t)) })
		t.Run("QuotaInput", func(t *testing.T) { t.Parallel(); testQuotaInput(t, counter(t)) })
		t.Run("QuotaTwoInstances", func(t *testing.T) { t.Parallel(); testQuotaTwoInstances(t, h) })
	}
}

// testBucket: a bucket allows its burst, then refuses with the time until
// a token is back; keys do not share buckets. The rate is slow enough
// that no token comes back during the test, however busy the machine.
func testBucket(t *testing.T, l ratelimit.Limiter) {
	ctx := t.Context()
	limit := ratelimit.Limit{PerSecond: 0.001, Burst: 3} // a token every 1,000 s
	for i := range 3 {
		d, err := l.Allow(ctx, "k", limit)
		if err != nil || !d.Allowed || d.Remaining != 2-i || d.Limit != 3 {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	d, err := l.Allow(ctx, "k", limit)
	if err != nil || d.Allowed || d.Remaining != 0 || d.Limit != 3 {
		t.Fatalf("4th request: %+v, %v; want refused", d, err)
	}
	if d.RetryAfter <= 900*time.Second || d.RetryAfter > 1000*time.Second {
		t.Fatalf("RetryAfter %v, want just under 1,000 s", d.RetryAfter)
	}
	if d.Reset <= 2900*time.Second || d.Reset > 3000*time.Second {
		t.Fatalf("Reset %v, want just under 3,000 s", d.Reset)
	}
	if d, err := l.Allow(ctx, "other", limit); err != nil || !d.Allowed || d.Remaining != 2 {
		t.Fatalf("another key: %+v, %v; keys share a bucket", d, err)
	}
}

// testRefills: a refused bucket allows again once a token is back.
func testRefills(t *testing.T, l ratelimit.Limiter) {
	ctx := t.Context()
	limit := ratelimit.Limit{PerSecond: 2, Burst: 1}
	refused := false
	for range 1000 {
		d, err := l.Allow(ctx, "k", limit)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			if d.RetryAfter <= 0 || d.RetryAfter > 500*time.Millisecond {
				t.Fatalf("refused with RetryAfter %v; want up to 500ms", d.RetryAfter)
			}
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("a bucket of 1 never refused")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := l.Allow(ctx, "k", limit)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused 30 s later: %+v", d)
		}
		time.Sleep(d.RetryAfter)
	}
}

// testLimits: an unlimited limit is allowed; an invalid one is an error.
func testLimits(t *testing.T, l ratelimit.Limiter) {
	ctx := t.Context()
	for range 3 {
		if d, err := l.Allow(ctx, "free", ratelimit.Limit{PerSecond: -1}); err != nil || !d.Allowed {
			t.Fatalf("unlimited: %+v, %v", d, err)
		}
	}
	for _, bad := range []ratelimit.Limit{{PerSecond: 1}, {PerSecond: 0, Burst: 1}, {PerSecond: math.NaN(), Burst: 1}, {PerSecond: math.Inf(1), Burst: 1}} {
		if d, err := l.Allow(ctx, "bad", bad); err == nil {
			t.Errorf("limit %+v: %+v, no error", bad, d)
		}
	}
}

// race runs n calls of f at once, half on each instance, and returns how
// many reported true.
func race(t *testing.T, a, b ratelimit.Limiter, n int, f func(l ratelimit.Limiter, i int) (bool, error)) int {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			<-start
			allowed, err := f(l, i)
			if err != nil {
				t.Error(err)
				return
			}
			if allowed {
				ok.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	return int(ok.Load())
}

// testTwoInstances: 200 requests at once through two instances on one
// store against a burst of 50 allow exactly 50.
func testTwoInstances(t *testing.T, h Harness) {
	a, b := h.New(t)
	limit := ratelimit.Limit{PerSecond: 0.001, Burst: 50}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := race(t, a, b, 200, func(l ratelimit.Limiter, _ int) (bool, error) {
		d, err := l.Allow(ctx, "shared", limit)
		return d.Allowed, err
	})
	if n != 50 {
		t.Fatalf("%d of 200 allowed across two instances; want the burst of 50", n)
	}
}

// testMultiTwoInstances: AllowAll through two instances on one store
// shares the buckets as Allow does.
func testMultiTwoInstances(t *testing.T, h Harness) {
	a, b := h.New(t)
	shared := ratelimit.Request{Key: "{m}:shared", Limit: ratelimit.Limit{PerSecond: 0.001, Burst: 30}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := race(t, a, b, 120, func(l ratelimit.Limiter, i int) (bool, error) {
		own := ratelimit.Request{Key: fmt.Sprintf("{m}:own-%d", i%10), Limit: ratelimit.Limit{PerSecond: 0.001, Burst: 1000}}
		ds, err := l.(ratelimit.MultiLimiter).AllowAll(ctx, []ratelimit.Request{own, shared})
		if err != nil {
			return false, err
		}
		return ds[0].Allowed && ds[1].Allowed, nil
	})
	if n != 30 {
		t.Fatalf("%d of 120 allowed across two instances; want the shared burst of 30", n)
	}
}

// checker collects a try's failures, which count only when its decisions
// were all in one window.
type checker struct {
	mu       sync.Mutex
	windows  []int64
	failures []string
}

// window notes a decision's window.
func (c *checker) window(w int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.windows = append(c.windows, w)
}

// fail notes a failure.
func (c *checker) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// inOneWindow runs f with a fresh key until its decisions were all in one
// window (a window may end during f), at most three times, and then
// reports f's failures.
func inOneWindow(t *testing.T, f func(key string, c *checker)) {
	t.Helper()
	for try := range 3 {
		var c checker
		f(fmt.Sprintf("try-%d", try), &c)
		same := true
		for _, w := range c.windows {
			same = same && w == c.windows[0]
		}
		if same {
			for _, msg := range c.failures {
				t.Error(msg)
			}
			return
		}
	}
	t.Fatal("three tries each crossed a window boundary")
}

// testQuota: takes are all or none, a take of 0 reads, keys are apart.
func testQuota(t *testing.T, c ratelimit.Counter) {
	ctx := t.Context()
	q := ratelimit.Quota{Limit: 10, Window: time.Hour}
	inOneWindow(t, func(key string, ck *checker) {
		step := func(n int, allowed bool, remaining int) {
			d, err := c.Take(ctx, key, n, q)
			if err != nil {
				t.Fatal(err)
			}
			ck.window(d.Window)
			if d.Allowed != allowed || d.Remaining != remaining || d.Limit != 10 {
				ck.fail("take %d: %+v; want allowed %v with %d left", n, d, allowed, remaining)
			}
			if d.Reset <= 0 || d.Reset > time.Hour {
				ck.fail("take %d: Reset %v, want within the hour", n, d.Reset)
			}
		}
		step(0, true, 10)
		step(4, true, 6)
		step(7, false, 6) // more than is left: nothing taken
		step(6, true, 0)
		step(1, false, 0)
		step(0, true, 0)
		step(11, false, 0)
		if d, err := c.Take(ctx, key+"-other", 10, q); err != nil || !d.Allowed || d.Remaining != 0 {
			t.Fatalf("another key: %+v, %v; keys share a counter", d, err)
		}
	})
	if d, err := c.Take(ctx, "big", 11, q); err != nil || d.Allowed || d.Remaining != 10 {
		t.Fatalf("more than the limit on a fresh key: %+v, %v; want refused, nothing taken", d, err)
	}
}

// testQuotaRefund: a refund gives units back to its window, never more
// than were taken, and never to another window.
func testQuotaRefund(t *testing.T, c ratelimit.Counter) {
	ctx := t.Context()
	q := ratelimit.Quota{Limit: 10, Window: time.Hour}
	inOneWindow(t, func(key string, ck *checker) {
		take := func(k string, n int) ratelimit.QuotaDecision {
			d, err := c.Take(ctx, k, n, q)
			if err != nil {
				t.Fatal(err)
			}
			ck.window(d.Window)
			return d
		}
		refund := func(k string, n int, w int64) {
			if err := c.Refund(ctx, k, n, q, w); err != nil {
				t.Fatal(err)
			}
		}
		d := take(key, 10)
		if !d.Allowed {
			ck.fail("take 10 of 10: %+v", d)
		}
		refund(key, 3, d.Window-1)
		refund(key, 3, d.Window)
		if d = take(key, 0); d.Remaining != 3 {
			ck.fail("after a refund of 3 (and one to another window): %+v; want 3 left", d)
		}
		refund(key, 50, d.Window)
		if d = take(key, 0); d.Remaining != 10 {
			ck.fail("after refunding more than was taken: %+v; want the limit, 10, left", d)
		}
		refund(key+"-never", 5, d.Window)
		if d = take(key+"-never", 11); d.Allowed || d.Remaining != 10 {
			ck.fail("a refund to a key never taken from gave units: %+v", d)
		}
	})
}

// testQuotaWindowEnds: a new window is whole again, and a refund to the
// window before leaves it alone.
func testQuotaWindowEnds(t *testing.T, c ratelimit.Counter) {
	ctx := t.Context()
	q := ratelimit.Quota{Limit: 2, Window: 500 * time.Millisecond}
	deadline := time.Now().Add(30 * time.Second)
	for try := 0; ; try++ {
		if time.Now().After(deadline) {
			t.Fatal("no window could be watched from start to end in 30 s")
		}
		key := fmt.Sprintf("w-%d", try)
		first, err := c.Take(ctx, key, 2, q)
		if err != nil || !first.Allowed || first.Reset > q.Window {
			t.Fatalf("take 2: %+v, %v", first, err)
		}
		var next ratelimit.QuotaDecision
		for {
			if next, err = c.Take(ctx, key, 1, q); err != nil {
				t.Fatal(err)
			}
			if next.Window != first.Window {
				break
			}
			if next.Allowed {
				t.Fatalf("a third unit in a window of 2: %+v", next)
			}
			time.Sleep(next.Reset)
		}
		if !next.Allowed || next.Remaining != 1 || next.Window <= first.Window {
			t.Fatalf("first take of a new window: %+v; want allowed, 1 left", next)
		}
		if err := c.Refund(ctx, key, 2, q, first.Window); err != nil {
			t.Fatal(err)
		}
		d, err := c.Take(ctx, key, 0, q)
		if err != nil {
			t.Fatal(err)
		}
		if d.Window != next.Window {
			continue // the new window ended too: watch another
		}
		if d.Remaining != 1 {
			t.Fatalf("a refund to the window before changed this one: %+v", d)
		}
		return
	}
}

// testQuotaInput: an unlimited quota allows; a bad quota or a negative
// take is ErrInvalidQuota.
func testQuotaInput(t *testing.T, c ratelimit.Counter) {
	ctx := t.Context()
	for range 2 {
		if d, err := c.Take(ctx, "free", 1000, ratelimit.Quota{Limit: -1}); err != nil || !d.Allowed {
			t.Fatalf("unlimited: %+v, %v", d, err)
		}
	}
	for _, tc := range []struct {
		n int
		q ratelimit.Quota
	}{
		{-1, ratelimit.Quota{Limit: 5, Window: time.Minute}},
		{1, ratelimit.Quota{Limit: 5}},
		{1, ratelimit.Quota{Limit: 5, Window: time.Microsecond}},
	} {
		if _, err := c.Take(ctx, "bad", tc.n, tc.q); !errors.Is(err, ratelimit.ErrInvalidQuota) {
			t.Errorf("take %d of %+v: %v, want ErrInvalidQuota", tc.n, tc.q, err)
		}
		if err := c.Refund(ctx, "bad", tc.n, tc.q, 1); !errors.Is(err, ratelimit.ErrInvalidQuota) {
			t.Errorf("refund %d of %+v: %v, want ErrInvalidQuota", tc.n, tc.q, err)
		}
	}
	if d, err := c.Take(ctx, "zero", 1, ratelimit.Quota{Limit: 0, Window: time.Minute}); err != nil || d.Allowed {
		t.Errorf("a quota of 0: %+v, %v; want refused", d, err)
	}
}

// testQuotaTwoInstances: 400 takes of 1 or 2 units at once through two
// instances on one store never take more than the limit of 300, and take
// all they can: what is left is less than the smallest refused take.
func testQuotaTwoInstances(t *testing.T, h Harness) {
	a, b := h.New(t)
	q := ratelimit.Quota{Limit: 300, Window: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inOneWindow(t, func(key string, ck *checker) {
		var taken, smallestRefused atomic.Int64
		smallestRefused.Store(math.MaxInt64)
		race(t, a, b, 400, func(l ratelimit.Limiter, i int) (bool, error) {
			n := 1 + i/2%2
			d, err := l.(ratelimit.Counter).Take(ctx, key, n, q)
			if err != nil {
				return false, err
			}
			ck.window(d.Window)
			if d.Allowed {
				taken.Add(int64(n))
			} else {
				for {
					s := smallestRefused.Load()
					if int64(n) >= s || smallestRefused.CompareAndSwap(s, int64(n)) {
						break
					}
				}
			}
			return d.Allowed, nil
		})
		d, err := a.(ratelimit.Counter).Take(ctx, key, 0, q)
		if err != nil {
			t.Fatal(err)
		}
		ck.window(d.Window)
		if got := taken.Load(); got > 300 || got+int64(d.Remaining) != 300 {
			ck.fail("two instances took %d units of 300, and %d are left", got, d.Remaining)
		}
		if int64(d.Remaining) >= smallestRefused.Load() {
			ck.fail("%d units left, but a take of %d was refused", d.Remaining, smallestRefused.Load())
		}
	})
}
