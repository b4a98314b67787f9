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
	interval, err := gcraInterval(limit)
	if err != nil {
		return ratelimit.Decision{}, err
	}
	var d ratelimit.Decision
	var retry, reset int64
	err = l.s.pool.QueryRow(ctx, l.s.sql(`SELECT allowed, remaining, retry_after_us, reset_us FROM {schema}.rate_limit_allow($1, $2, $3)`),
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
	out := make([]ratelimit.Decision, len(reqs))
	var keys []string
	var intervals []int64
	var bursts []int32
	var idx []int
	seen := make(map[string]bool, len(reqs))
	for i, r := range reqs {
		if r.Limit.Unlimited() {
			out[i] = ratelimit.Decision{Allowed: true, Limit: r.Limit.Burst, Remaining: r.Limit.Burst}
			continue
		}
		interval, err := gcraInterval(r.Limit)
		if err != nil {
			return nil, err
		}
		if seen[r.Key] {
			return nil, fmt.Errorf("pgstore: rate limit: bucket %q asked twice", r.Key)
		}
		seen[r.Key] = true
		keys, intervals, bursts, idx = append(keys, r.Key), append(intervals, interval), append(bursts, int32(min(r.Limit.Burst, math.MaxInt32))), append(idx, i)
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

// gcraInterval returns limit's emission interval in microseconds.
func gcraInterval(limit ratelimit.Limit) (int64, error) {
	if limit.PerSecond == 0 || limit.Burst < 1 || math.IsNaN(limit.PerSecond) || math.IsInf(limit.PerSecond, 0) {
		return 0, fmt.Errorf("pgstore: invalid rate limit %+v", limit)
	}
	return int64(math.Max(1, math.Round(1e6/limit.PerSecond))), nil
}
