package httpapi

import (
	"time"

	"github.com/validmail/validmail/httpapi/ratelimit"
)

// RateLimit is a token bucket: PerSecond tokens are added every second, up
// to Burst; each request takes one. A negative PerSecond means unlimited.
type RateLimit = ratelimit.Limit

// Decision is a [RateLimiter]'s answer for one request; it fills the
// RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and Retry-After
// headers.
type Decision = ratelimit.Decision

// RateLimiter takes one token for a key from a bucket shaped by a
// [RateLimit]. It may be called concurrently and must honor ctx. When it
// returns an error (its backend is down), the handler lets the request
// through and logs the error: a limiter outage does not take the API down.
type RateLimiter = ratelimit.Limiter

// MemoryRateLimiter is the default [RateLimiter]: one token bucket per key
// in memory (golang.org/x/time/rate), limiting one process only.
type MemoryRateLimiter = ratelimit.Memory

// NewMemoryRateLimiter returns an empty in-memory limiter; now is its
// clock (nil means time.Now).
func NewMemoryRateLimiter(now func() time.Time) *MemoryRateLimiter {
	return ratelimit.NewMemory(now)
}

// DefaultWebhookTestLimit is the default [Config.WebhookTestLimit].
var DefaultWebhookTestLimit = RateLimit{PerSecond: DefaultWebhookTestRatePerSecond, Burst: DefaultWebhookTestBurst}

// WebhookTestKey names the bucket of an account's webhook test events in
// a [RateLimiter], for every handler that sends them.
func WebhookTestKey(accountID string) string { return "webhook-test:" + accountID }
