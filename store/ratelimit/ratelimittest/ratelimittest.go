// Package ratelimittest is the conformance suite of the limiters in
// package ratelimit: what every [ratelimit.Limiter] (token buckets), every
// [ratelimit.MultiLimiter] (several buckets at once) and every
// [ratelimit.Counter] (fixed-window quotas) must do, in memory, on
// PostgreSQL and on Redis. [Run] checks all that a limiter implements,
// with two instances of a deployment sharing one store racing for the
// same bucket or quota: exactly the limit goes through, never more.
package ratelimittest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/store/ratelimit"
)

// RunMulti runs the suite. newLimiter returns a limiter with no buckets
// yet; limiters it returns within one test share their buckets (they
// stand for the instances of one deployment).
func RunMulti(t *testing.T, newLimiter func(t *testing.T) ratelimit.MultiLimiter) {
	t.Run("AllOrNone", func(t *testing.T) { testAllOrNone(t, newLimiter(t)) })
	t.Run("Unlimited", func(t *testing.T) { testUnlimited(t, newLimiter(t)) })
	t.Run("SameAsAllow", func(t *testing.T) { testSameAsAllow(t, newLimiter(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newLimiter(t)) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, newLimiter(t)) })
}

// testAllOrNone: a request refused by one bucket takes nothing from the
// other, which reports what it has left. (The buckets of one call share a
// group, "{a}", as callers name them.)
func testAllOrNone(t *testing.T, l ratelimit.MultiLimiter) {
	ctx := context.Background()
	key := ratelimit.Request{Key: "{a}:key", Limit: ratelimit.Limit{PerSecond: 0.01, Burst: 3}}
	acct := ratelimit.Request{Key: "{a}:acct", Limit: ratelimit.Limit{PerSecond: 0.01, Burst: 1}}
	ds, err := l.AllowAll(ctx, []ratelimit.Request{key, acct})
	if err != nil || len(ds) != 2 || !ds[0].Allowed || !ds[1].Allowed || ds[0].Remaining != 2 || ds[1].Remaining != 0 {
		t.Fatalf("first request: %+v, %v; want both allowed, 2 and 0 left", ds, err)
	}
	for i := range 3 {
		ds, err = l.AllowAll(ctx, []ratelimit.Request{key, acct})
		if err != nil || len(ds) != 2 {
			t.Fatalf("request %d: %+v, %v", i+2, ds, err)
		}
		if !ds[0].Allowed || ds[0].Remaining != 2 || ds[0].Limit != 3 {
			t.Fatalf("request %d: key bucket %+v; want allowed with 2 left, nothing taken", i+2, ds[0])
		}
		if ds[1].Allowed || ds[1].RetryAfter <= 0 || ds[1].Limit != 1 {
			t.Fatalf("request %d: account bucket %+v; want refused with a RetryAfter", i+2, ds[1])
		}
	}
	// The key's tokens are all still there.
	for i := range 2 {
		d, err := l.Allow(ctx, key.Key, key.Limit)
		if err != nil || !d.Allowed || d.Remaining != 1-i {
			t.Fatalf("key alone, request %d: %+v, %v; the refused requests took its tokens", i, d, err)
		}
	}
	// And in the other order, a refusing first bucket spares the second.
	other := ratelimit.Request{Key: "{a}:other", Limit: ratelimit.Limit{PerSecond: 0.01, Burst: 1}}
	ds, err = l.AllowAll(ctx, []ratelimit.Request{acct, other})
	if err != nil || ds[0].Allowed || !ds[1].Allowed {
		t.Fatalf("refusing bucket first: %+v, %v", ds, err)
	}
	if d, err := l.Allow(ctx, other.Key, other.Limit); err != nil || !d.Allowed {
		t.Fatalf("the spared bucket: %+v, %v", d, err)
	}
}

// testUnlimited: an unlimited request is allowed and decides nothing.
func testUnlimited(t *testing.T, l ratelimit.MultiLimiter) {
	ctx := context.Background()
	free := ratelimit.Request{Key: "free", Limit: ratelimit.Limit{PerSecond: -1}}
	one := ratelimit.Request{Key: "one", Limit: ratelimit.Limit{PerSecond: 0.01, Burst: 1}}
	ds, err := l.AllowAll(ctx, []ratelimit.Request{free, one})
	if err != nil || !ds[0].Allowed || !ds[1].Allowed {
		t.Fatalf("%+v, %v", ds, err)
	}
	ds, err = l.AllowAll(ctx, []ratelimit.Request{free, one})
	if err != nil || !ds[0].Allowed || ds[1].Allowed {
		t.Fatalf("second: %+v, %v; want the unlimited allowed and the other refused", ds, err)
	}
	ds, err = l.AllowAll(ctx, []ratelimit.Request{free})
	if err != nil || len(ds) != 1 || !ds[0].Allowed {
		t.Fatalf("unlimited alone: %+v, %v", ds, err)
	}
	if ds, err := l.AllowAll(ctx, nil); err != nil || len(ds) != 0 {
		t.Fatalf("no request: %+v, %v", ds, err)
	}
}

// testSameAsAllow: one bucket through AllowAll behaves as through Allow,
// and they share it.
func testSameAsAllow(t *testing.T, l ratelimit.MultiLimiter) {
	ctx := context.Background()
	r := ratelimit.Request{Key: "same", Limit: ratelimit.Limit{PerSecond: 1, Burst: 3}}
	for i := range 3 {
		var d ratelimit.Decision
		var err error
		if i%2 == 0 {
			var ds []ratelimit.Decision
			ds, err = l.AllowAll(ctx, []ratelimit.Request{r})
			if err == nil {
				d = ds[0]
			}
		} else {
			d, err = l.Allow(ctx, r.Key, r.Limit)
		}
		if err != nil || !d.Allowed || d.Remaining != 2-i || d.Limit != 3 {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	ds, err := l.AllowAll(ctx, []ratelimit.Request{r})
	if err != nil || ds[0].Allowed || ds[0].RetryAfter <= 800*time.Millisecond || ds[0].RetryAfter > time.Second {
		t.Fatalf("4th request: %+v, %v; want refused for just under 1s", ds, err)
	}
}

// testConcurrent: 200 requests at once, half naming the shared bucket
// first and half last, each with a bucket of its own: exactly the shared
// burst is allowed, and nothing deadlocks.
func testConcurrent(t *testing.T, l ratelimit.MultiLimiter) {
	shared := ratelimit.Request{Key: "{c}:shared", Limit: ratelimit.Limit{PerSecond: 0.01, Burst: 25}}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 200 {
		wg.Go(func() {
			own := ratelimit.Request{Key: fmt.Sprintf("{c}:own-%d", i%20), Limit: ratelimit.Limit{PerSecond: 0.01, Burst: 1000}}
			reqs := []ratelimit.Request{own, shared}
			if i%2 == 1 {
				reqs = []ratelimit.Request{shared, own}
			}
			ds, err := l.AllowAll(ctx, reqs)
			if err != nil {
				t.Error(err)
				return
			}
			if ds[0].Allowed && ds[1].Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 25 {
		t.Fatalf("%d of 200 allowed; want the shared burst of 25", n)
	}
	// Own buckets lost a token only for the allowed requests.
	left := 0
	for i := range 20 {
		d, err := l.Allow(context.Background(), fmt.Sprintf("{c}:own-%d", i), ratelimit.Limit{PerSecond: 0.01, Burst: 1000})
		if err != nil {
			t.Fatal(err)
		}
		left += d.Remaining
	}
	if want := 20*999 - 25; left != want {
		t.Fatalf("own buckets have %d tokens left in all; want %d", left, want)
	}
}

// testBadInput: a bucket named twice, an invalid limit or buckets of two
// groups are an error.
func testBadInput(t *testing.T, l ratelimit.MultiLimiter) {
	ctx := context.Background()
	r := ratelimit.Request{Key: "twice", Limit: ratelimit.Limit{PerSecond: 1, Burst: 1}}
	if _, err := l.AllowAll(ctx, []ratelimit.Request{r, r}); err == nil {
		t.Error("a bucket named twice was accepted")
	}
	bad := ratelimit.Request{Key: "bad", Limit: ratelimit.Limit{PerSecond: 1, Burst: 0}}
	if _, err := l.AllowAll(ctx, []ratelimit.Request{bad}); err == nil {
		t.Error("a burst of 0 was accepted")
	}
	// Buckets of different groups: a limiter spread over servers could
	// not take from both at once.
	apart := []ratelimit.Request{
		{Key: "{a}:one", Limit: ratelimit.Limit{PerSecond: 1, Burst: 1}},
		{Key: "{b}:one", Limit: ratelimit.Limit{PerSecond: 1, Burst: 1}},
	}
	if _, err := l.AllowAll(ctx, apart); err == nil {
		t.Error("buckets of two groups were accepted in one call")
	}
	ungrouped := []ratelimit.Request{
		{Key: "one", Limit: ratelimit.Limit{PerSecond: 1, Burst: 1}},
		{Key: "two", Limit: ratelimit.Limit{PerSecond: 1, Burst: 1}},
	}
	if _, err := l.AllowAll(ctx, ungrouped); err == nil {
		t.Error("two keys without a group, each its own, were accepted in one call")
	}
}
