package pgstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/validmail/validmail/httpapi/ratelimit"
)

var _ ratelimit.Limiter = (*RateLimiter)(nil)

// RateLimiter is a [ratelimit.Limiter] whose buckets live in the database,
// so that every process of a deployment shares one limit per key. Each
// decision is one call of a stored function (GCRA over a row per bucket,
// timed by the database's clock): one round trip. It is safe for
// concurrent use. [Store.Backend] provides it as the backend's Limiter.
type RateLimiter struct{ s *Store }

// Allow implements [ratelimit.Limiter]. An unlimited limit is allowed
// without a round trip.
func (l *RateLimiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Decision, error) {
	if limit.Unlimited() {
		return ratelimit.Decision{Allowed: true, Limit: limit.Burst, Remaining: limit.Burst}, nil
	}
	if limit.PerSecond == 0 || limit.Burst < 1 || math.IsNaN(limit.PerSecond) || math.IsInf(limit.PerSecond, 0) {
		return ratelimit.Decision{}, fmt.Errorf("pgstore: invalid rate limit %+v", limit)
	}
	interval := int64(math.Max(1, math.Round(1e6/limit.PerSecond)))
	var d ratelimit.Decision
	var retry, reset int64
	err := l.s.pool.QueryRow(ctx, l.s.sql(`SELECT allowed, remaining, retry_after_us, reset_us FROM {schema}.rate_limit_allow($1, $2, $3)`),
		key, interval, limit.Burst).Scan(&d.Allowed, &d.Remaining, &retry, &reset)
	if err != nil {
		return ratelimit.Decision{}, fail(ctx, "rate limit", err)
	}
	d.Limit = limit.Burst
	d.Remaining = max(0, d.Remaining)
	d.RetryAfter = time.Duration(retry) * time.Microsecond
	d.Reset = time.Duration(reset) * time.Microsecond
	return d, nil
}
