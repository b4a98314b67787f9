package redisstore_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/store/ratelimit"
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

// The limiters' conformance suite runs in TestBackend and
// TestClusterBackend (storetest.RunBackend), with two stores over one
// prefix.

// Buckets and quota windows expire when they no longer matter.
func TestRateLimiterExpiry(t *testing.T) {
	t.Parallel()
	l, c, prefix := newTestLimiter(t)
	ctx := t.Context()
	if _, err := l.Allow(ctx, "k", ratelimit.Limit{PerSecond: 1, Burst: 3}); err != nil {
		t.Fatal(err)
	}
	ttl, err := c.PTTL(ctx, prefix+"ratelimit:k").Result()
	if err != nil || ttl <= 0 || ttl > time.Second {
		t.Fatalf("bucket TTL %v, %v: the key must expire when the bucket is full", ttl, err)
	}
	q := ratelimit.Quota{Limit: 5, Window: time.Hour}
	d, err := l.Take(ctx, "q", 2, q)
	if err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	key := prefix + "quota:q:" + strconv.FormatInt(d.Window, 10)
	ttl, err = c.PTTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > d.Reset+time.Millisecond {
		t.Fatalf("quota TTL %v, %v: the key must expire when its window ends, in %v", ttl, err, d.Reset)
	}
	if err := l.Refund(ctx, "q", 1, q, d.Window); err != nil {
		t.Fatal(err)
	}
	if ttl2, err := c.PTTL(ctx, key).Result(); err != nil || ttl2 <= 0 || ttl2 > ttl {
		t.Fatalf("quota TTL after a refund %v, %v", ttl2, err)
	}
	if err := l.Refund(ctx, "q", 1, q, d.Window-1); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, prefix+"quota:q:"+strconv.FormatInt(d.Window-1, 10)).Result(); n != 0 {
		t.Fatal("a refund to an ended window made a key")
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

// BenchmarkQuota is the cost of one take: one script run.
func BenchmarkQuota(b *testing.B) {
	s, _, _ := setup(b, nil)
	c := s.Backend().Limiter.(ratelimit.Counter)
	q := ratelimit.Quota{Limit: 1 << 30, Window: time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Take(b.Context(), "bench", 1, q); err != nil {
			b.Fatal(err)
		}
	}
}

// The store's limiter keeps an account's buckets, named with its id as
// their group, in the account's slot, and spreads the buckets of client
// addresses over the shards.
func TestRateLimitPlacement(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never contacted
	defer c.Close()
	s, err := redisstore.New(c, &redisstore.Config{Prefix: "placement"})
	if err != nil {
		t.Fatal(err)
	}
	for _, acct := range []string{"0194f0d2-6c1e-8a3b-9c4d-5e6f7a8b9c0d", "0194f0d2-6c1e-8a3b-9c4d-5e6f7a8b9c07", "some-account"} {
		want := redisstore.SlotOf(redisstore.KeyOf(s, acct, "bal:"+acct))
		for _, b := range []string{"{" + acct + "}:key:k1", "read:{" + acct + "}:acct", "webhook-test:{" + acct + "}"} {
			if got := redisstore.SlotOf(redisstore.BucketKey(s, b)); got != want {
				t.Errorf("bucket %q in slot %d, its account's keys in %d", b, got, want)
			}
		}
	}
	slots := map[int]bool{}
	for i := range 64 {
		slots[redisstore.SlotOf(redisstore.BucketKey(s, "authfail:10.0.0."+strconv.Itoa(i)))] = true
	}
	if len(slots) < 8 {
		t.Errorf("64 client addresses' buckets in %d slots, want them spread over the shards", len(slots))
	}
}
