package pgstore_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/ratelimit"
	"github.com/validmail/validmail/httpapi/ratelimit/ratelimittest"
)

func TestRateLimiterBucket(t *testing.T) {
	t.Parallel()
	l := newStore(t).Backend().Limiter
	ctx := t.Context()
	limit := ratelimit.Limit{PerSecond: 1, Burst: 3}
	for i := range 3 {
		d, err := l.Allow(ctx, "k", limit)
		if err != nil || !d.Allowed || d.Remaining != 2-i || d.Limit != 3 {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	d, err := l.Allow(ctx, "k", limit)
	if err != nil || d.Allowed || d.Remaining != 0 {
		t.Fatalf("4th request: %+v, %v", d, err)
	}
	if d.RetryAfter <= 800*time.Millisecond || d.RetryAfter > time.Second {
		t.Fatalf("RetryAfter %v, want just under 1s", d.RetryAfter)
	}
	if d, _ := l.Allow(ctx, "other", limit); !d.Allowed {
		t.Fatal("keys share a bucket")
	}
}

// Two processes on one schema share each key's limit: 100 concurrent
// requests through two limiters against a burst of 10 allow 10.
func TestRateLimiterShared(t *testing.T) {
	t.Parallel()
	schema := testSchema(t, testPool(t))
	a, b := openSchema(t, schema).Backend().Limiter, openSchema(t, schema).Backend().Limiter
	limit := ratelimit.Limit{PerSecond: 0.01, Burst: 10}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range 100 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			d, err := l.Allow(t.Context(), "shared", limit)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 10 {
		t.Fatalf("%d of 100 allowed across two limiters, want 10", n)
	}
}

// BenchmarkRateLimiter is the cost of one decision: one round trip.
func BenchmarkRateLimiter(b *testing.B) {
	l := newStore(b).Backend().Limiter
	limit := ratelimit.Limit{PerSecond: 1e6, Burst: 1e6}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(b.Context(), "bench", limit); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRateLimiterMulti(t *testing.T) {
	t.Parallel()
	ratelimittest.RunMulti(t, func(t *testing.T) ratelimit.MultiLimiter {
		return newStore(t).Backend().Limiter.(ratelimit.MultiLimiter)
	})
}
