package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/validmail/validmail/store/ratelimit"
)

var _ ratelimit.MultiLimiter = (*RateLimiter)(nil)

// RateLimiter is a [ratelimit.Limiter], [ratelimit.MultiLimiter] and
// [ratelimit.Counter] whose buckets and quotas live in the database, so
// that every process of a deployment shares one limit per key. Each
// decision is one call of a stored function (GCRA over a row per bucket;
// a fixed-window count in a row per quota), timed by the database's
// clock: one round trip. It is safe for concurrent use. [Store.Backend]
// provides it as the backend's Limiter.
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
		storedKey(key), interval, limit.Burst).Scan(&d.Allowed, &d.Remaining, &retry, &reset)
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
		keys = append(keys, storedKey(r.Key))
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

var _ ratelimit.Counter = (*RateLimiter)(nil)

// Take implements [ratelimit.Counter]: one call of a stored function that
// creates or locks the key's row and takes the units if its window has
// them, by the database's clock; taking 0 units reads without writing.
// An unlimited quota is allowed without a round trip.
func (l *RateLimiter) Take(ctx context.Context, key string, n int, q ratelimit.Quota) (ratelimit.QuotaDecision, error) {
	if err := ratelimit.CheckTake(n, q); err != nil {
		return ratelimit.QuotaDecision{}, fmt.Errorf("pgstore: %w", err)
	}
	if q.Unlimited() {
		return ratelimit.QuotaDecision{Allowed: true, Limit: q.Limit}, nil
	}
	d := ratelimit.QuotaDecision{Limit: q.Limit}
	var reset int64
	err := l.s.pool.QueryRow(ctx, l.s.sql(`SELECT allowed, remaining, reset_us, win_no FROM {schema}.quota_take($1, $2, $3, $4)`),
		storedKey(key), clampInt32(n), clampInt32(q.Limit), q.Window.Microseconds()).Scan(&d.Allowed, &d.Remaining, &reset, &d.Window)
	if err != nil {
		return ratelimit.QuotaDecision{}, fail(ctx, "quota", err)
	}
	d.Reset = time.Duration(reset) * time.Microsecond
	return d, nil
}

// Refund implements [ratelimit.Counter]: one statement, which changes
// nothing unless the key's row is still in window.
func (l *RateLimiter) Refund(ctx context.Context, key string, n int, q ratelimit.Quota, window int64) error {
	if err := ratelimit.CheckTake(n, q); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	if q.Unlimited() || n == 0 {
		return nil
	}
	_, err := l.s.pool.Exec(ctx, l.s.sql(`UPDATE {schema}.quotas SET used = greatest(used - $3, 0) WHERE key = $1 AND win = $2`),
		storedKey(key), window, clampInt32(n))
	return fail(ctx, "quota refund", err)
}

// storedKey returns key as a text value can hold it: itself, unless it
// holds NUL or invalid UTF-8 (which text refuses), then its SHA-256.
func storedKey(key string) string {
	if utf8.ValidString(key) && !strings.ContainsRune(key, 0) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// clampInt32 bounds n to an int column.
func clampInt32(n int) int32 { return int32(min(max(n, math.MinInt32), math.MaxInt32)) }
