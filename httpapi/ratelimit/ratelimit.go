// Package ratelimit defines the per-key request limits of the HTTP API:
// the [Limit] of a token bucket, the [Decision] a [Limiter] takes, and
// [Memory], a limiter for one process. It depends on nothing else in the
// module, so that shared limiters in storage backends can implement
// [Limiter] without importing the HTTP layer.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a token bucket: PerSecond tokens are added every second, up
// to Burst; each request takes one.
type Limit struct {
	// PerSecond is the steady rate; negative means unlimited.
	PerSecond float64
	// Burst is the bucket's size: how many requests may arrive at once.
	Burst int
}

// Unlimited reports whether the limit lets every request through.
func (l Limit) Unlimited() bool { return l.PerSecond < 0 }

// Decision is a [Limiter]'s answer for one request.
type Decision struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// Limit is the bucket's size (the Limit-Limit header).
	Limit int
	// Remaining is how many more requests the bucket would allow now
	// (Limit-Remaining).
	Remaining int
	// Reset is the time until the bucket is full again (Limit-Reset).
	Reset time.Duration
	// RetryAfter is, for a refused request, the time until one request
	// would be allowed (Retry-After).
	RetryAfter time.Duration
}

// Limiter takes one token for key from a bucket shaped by limit.
// It may be called concurrently and must honor ctx. An error means the
// limiter could not decide (its backend is down); the HTTP API then lets
// the request through and logs the error.
type Limiter interface {
	Allow(ctx context.Context, key string, limit Limit) (Decision, error)
}

// Memory is a [Limiter] holding one token bucket per key in
// memory (golang.org/x/time/rate). It limits one process only. Buckets are
// kept for the life of the limiter: keys are API key ids, a bounded set.
// It is safe for concurrent use.
type Memory struct {
	now     func() time.Time
	buckets sync.Map // key → *bucket
}

type bucket struct {
	mu    sync.Mutex
	lim   *rate.Limiter
	limit Limit
}

// NewMemory returns an empty limiter. now is its clock; nil
// means time.Now.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now}
}

// Allow implements [Limiter].
func (m *Memory) Allow(_ context.Context, key string, limit Limit) (Decision, error) {
	if limit.Unlimited() {
		return Decision{Allowed: true, Limit: limit.Burst, Remaining: limit.Burst}, nil
	}
	v, ok := m.buckets.Load(key)
	if !ok {
		v, _ = m.buckets.LoadOrStore(key, &bucket{lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst), limit: limit})
	}
	b := v.(*bucket)
	now := m.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit != limit {
		b.lim.SetLimitAt(now, rate.Limit(limit.PerSecond))
		b.lim.SetBurstAt(now, limit.Burst)
		b.limit = limit
	}
	allowed := b.lim.AllowN(now, 1)
	tokens := b.lim.TokensAt(now)
	d := Decision{
		Allowed:   allowed,
		Limit:     limit.Burst,
		Remaining: max(0, int(math.Floor(tokens))),
		Reset:     secondsFor(float64(limit.Burst)-tokens, limit.PerSecond),
	}
	if !allowed {
		d.RetryAfter = secondsFor(1-tokens, limit.PerSecond)
	}
	return d, nil
}

// secondsFor returns how long a bucket filling at perSecond takes to gain
// tokens tokens.
func secondsFor(tokens, perSecond float64) time.Duration {
	if tokens <= 0 || perSecond <= 0 {
		return 0
	}
	return time.Duration(tokens / perSecond * float64(time.Second))
}
