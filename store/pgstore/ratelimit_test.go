package pgstore_test

import (
	"testing"
	"time"

	"github.com/validmail/validmail/store/ratelimit"
)

// The limiters' conformance suite runs in TestBackend
// (storetest.RunBackend), with two stores over one schema.

// Keys a text column cannot hold (NUL, invalid UTF-8) are limited like
// any other.
func TestRateLimiterOddKeys(t *testing.T) {
	t.Parallel()
	l := newStore(t).Backend().Limiter
	c := l.(ratelimit.Counter)
	for _, key := range []string{"a\x00b", "jos\xe9@example.com"} {
		if d, err := l.Allow(t.Context(), key, ratelimit.Limit{PerSecond: 0.001, Burst: 1}); err != nil || !d.Allowed {
			t.Fatalf("Allow(%q): %+v, %v", key, d, err)
		}
		if d, err := l.Allow(t.Context(), key, ratelimit.Limit{PerSecond: 0.001, Burst: 1}); err != nil || d.Allowed {
			t.Fatalf("Allow(%q) again: %+v, %v", key, d, err)
		}
		q := ratelimit.Quota{Limit: 1, Window: 1000 * time.Hour}
		d, err := c.Take(t.Context(), key, 1, q)
		if err != nil || !d.Allowed {
			t.Fatalf("Take(%q): %+v, %v", key, d, err)
		}
		if err := c.Refund(t.Context(), key, 1, q, d.Window); err != nil {
			t.Fatalf("Refund(%q): %v", key, err)
		}
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

// BenchmarkQuota is the cost of one take: one round trip.
func BenchmarkQuota(b *testing.B) {
	c := newStore(b).Backend().Limiter.(ratelimit.Counter)
	q := ratelimit.Quota{Limit: 1 << 30, Window: time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Take(b.Context(), "bench", 1, q); err != nil {
			b.Fatal(err)
		}
	}
}
