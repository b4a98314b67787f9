package redisstore_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/httpapi/ratelimit"
	"github.com/validmail/validmail/httpapi/ratelimit/ratelimittest"
	"github.com/validmail/validmail/store/redisstore"
)

// rateLimitClient connects to VALIDMAIL_TEST_REDIS, skipping t when it is
// unset and failing it when the server cannot be reached.
func rateLimitClient(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("VALIDMAIL_TEST_REDIS")
	if url == "" {
		t.Skip("VALIDMAIL_TEST_REDIS is not set: skipping the Redis rate limiter tests")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("VALIDMAIL_TEST_REDIS=%s: %v", url, err)
	}
	return c
}

func newTestLimiter(t *testing.T) (*redisstore.RateLimiter, *redis.Client, string) {
	c := rateLimitClient(t)
	prefix := "vmtest-rl-" + uuid.NewString() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return redisstore.NewRateLimiter(c, prefix), c, prefix
}

func TestRateLimiterBucket(t *testing.T) {
	t.Parallel()
	l, c, prefix := newTestLimiter(t)
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
	if d.RetryAfter <= 900*time.Millisecond || d.RetryAfter > time.Second {
		t.Fatalf("RetryAfter %v, want just under 1s", d.RetryAfter)
	}
	if d.Reset <= 2900*time.Millisecond || d.Reset > 3*time.Second {
		t.Fatalf("Reset %v, want just under 3s", d.Reset)
	}
	if d, _ := l.Allow(ctx, "other", limit); !d.Allowed {
		t.Fatal("keys share a bucket")
	}
	ttl, err := c.PTTL(ctx, prefix+"ratelimit:k").Result()
	if err != nil || ttl <= 0 || ttl > 3*time.Second {
		t.Fatalf("bucket TTL %v, %v: the key must expire when the bucket is full", ttl, err)
	}
}

func TestRateLimiterRefills(t *testing.T) {
	t.Parallel()
	l, _, _ := newTestLimiter(t)
	ctx := t.Context()
	limit := ratelimit.Limit{PerSecond: 20, Burst: 1}
	if d, _ := l.Allow(ctx, "k", limit); !d.Allowed {
		t.Fatal("first request refused")
	}
	d, _ := l.Allow(ctx, "k", limit)
	if d.Allowed {
		t.Fatal("second request allowed at once")
	}
	time.Sleep(d.RetryAfter + 5*time.Millisecond)
	if d, _ := l.Allow(ctx, "k", limit); !d.Allowed {
		t.Fatalf("refused after RetryAfter: %+v", d)
	}
}

// Limiters over one server (two instances) share the bucket, and
// concurrent requests never exceed it.
func TestRateLimiterShared(t *testing.T) {
	t.Parallel()
	a, c, prefix := newTestLimiter(t)
	b := redisstore.NewRateLimiter(c, prefix)
	limit := ratelimit.Limit{PerSecond: 0.001, Burst: 50}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			d, err := l.Allow(context.Background(), "k", limit)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 50 {
		t.Fatalf("%d requests allowed across two limiters, want 50", n)
	}
}

func TestRateLimiterLimits(t *testing.T) {
	t.Parallel()
	l, _, _ := newTestLimiter(t)
	if d, err := l.Allow(t.Context(), "k", ratelimit.Limit{PerSecond: -1}); err != nil || !d.Allowed {
		t.Fatalf("unlimited: %+v, %v", d, err)
	}
	if _, err := l.Allow(t.Context(), "k", ratelimit.Limit{PerSecond: 1}); err == nil {
		t.Fatal("burst 0 accepted")
	}
}

func TestRateLimiterServerDown(t *testing.T) {
	t.Parallel()
	rateLimitClient(t) // runs only where Redis tests run
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	if _, err := redisstore.NewRateLimiter(c, "x:").Allow(t.Context(), "k", ratelimit.Limit{PerSecond: 1, Burst: 1}); err == nil {
		t.Fatal("no error from an unreachable server")
	}
}

func TestRateLimiterMulti(t *testing.T) {
	t.Parallel()
	ratelimittest.RunMulti(t, func(t *testing.T) ratelimit.MultiLimiter {
		l, _, _ := newTestLimiter(t)
		return l
	})
}
