package pgstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/validmail/validmail/httpapi/ratelimit"
)

var _ ratelimit.MultiLimiter = (*RateLimiter)(nil)

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
	if err := limit.Check(); err != nil {
		return ratelimit.Decision{}, fmt.Errorf("pgstore: %w", err)
	}
	interval := limit.Interval().Microseconds()
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

// AllowAll implements [ratelimit.MultiLimiter]: one call of a stored
// function, one round trip, for all the limited buckets.
func (l *RateLimiter) AllowAll(ctx context.Context, reqs []ratelimit.Request) ([]ratelimit.Decision, error) {
	out, idx, err := ratelimit.Partition(reqs)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	keys := make([]string, 0, len(idx))
	intervals := make([]int64, 0, len(idx))
	bursts := make([]int32, 0, len(idx))
	for _, i := range idx {
		r := reqs[i]
		keys = append(keys, r.Key)
		intervals = append(intervals, r.Limit.Interval().Microseconds())
		bursts = append(bursts, int32(min(r.Limit.Burst, math.MaxInt32)))
	}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := l.s.pool.Query(ctx, l.s.sql(`SELECT allowed, remaining, retry_after_us, reset_us FROM {schema}.rate_limit_allow_all($1, $2, $3)`),
		keys, intervals, bursts)
	if err != nil {
		return nil, fail(ctx, "rate limit", err)
	}
	defer rows.Close()
	k := 0
	for rows.Next() {
		if k >= len(idx) {
			return nil, fmt.Errorf("pgstore: rate limit: more decisions than buckets")
		}
		var d ratelimit.Decision
		var retry, reset int64
		if err := rows.Scan(&d.Allowed, &d.Remaining, &retry, &reset); err != nil {
			return nil, fail(ctx, "rate limit", err)
		}
		i := idx[k]
		d.Limit = reqs[i].Limit.Burst
		d.Remaining = max(0, d.Remaining)
		d.RetryAfter = time.Duration(retry) * time.Microsecond
		d.Reset = time.Duration(reset) * time.Microsecond
		out[i] = d
		k++
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, "rate limit", err)
	}
	if k != len(idx) {
		return nil, fmt.Errorf("pgstore: rate limit: %d decisions for %d buckets", k, len(idx))
	}
	return out, nil
}
