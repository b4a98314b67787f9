package redisstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/httpapi/ratelimit"
)

var _ ratelimit.Limiter = (*RateLimiter)(nil)

// gcraScript is the generic cell rate algorithm over one key holding the
// theoretical arrival time (TAT), in microseconds of the server's clock.
// A request is allowed when TAT + interval - burst*interval <= now; it
// then moves TAT forward by one interval. The key expires when the bucket
// would be full again.
//
// KEYS[1]: the bucket. ARGV[1]: interval (µs per token). ARGV[2]: burst.
// Returns {allowed (0|1), remaining, retry after (µs), reset (µs)}.
const gcraScript = `
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local tolerance = interval * burst
local newtat = tat + interval
local allowat = newtat - tolerance
if allowat > now then
  return {0, 0, math.ceil(allowat - now), math.ceil(tat - now)}
end
redis.call('SET', KEYS[1], string.format('%.0f', newtat), 'PX', math.max(1, math.ceil((newtat - now) / 1000)))
return {1, math.floor((tolerance - (newtat - now)) / interval), 0, math.ceil(newtat - now)}
`

// RateLimiter is a [ratelimit.Limiter] whose buckets live in Redis, so
// that every instance of a deployment shares one limit per key. Each
// decision is one Lua script run (GCRA), atomic on the server and timed by
// the server's clock, so instances' clocks need not agree. It is safe for
// concurrent use; the client is the host's and is not closed.
type RateLimiter struct {
	client redis.UniversalClient
	prefix string
	script *redis.Script
}

// NewRateLimiter returns a limiter storing its buckets in client under keys
// that start with prefix (for example "validmail:"), followed by
// "ratelimit:" and the limited key.
func NewRateLimiter(client redis.UniversalClient, prefix string) *RateLimiter {
	return &RateLimiter{client: client, prefix: prefix, script: redis.NewScript(gcraScript)}
}

// Allow implements [ratelimit.Limiter]. An unlimited limit (negative
// PerSecond) is allowed without a round trip.
func (l *RateLimiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Decision, error) {
	if limit.Unlimited() {
		return ratelimit.Decision{Allowed: true, Limit: limit.Burst, Remaining: limit.Burst}, nil
	}
	if limit.PerSecond == 0 || limit.Burst < 1 || math.IsNaN(limit.PerSecond) || math.IsInf(limit.PerSecond, 0) {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: invalid rate limit %+v", limit)
	}
	interval := math.Max(1, math.Round(1e6/limit.PerSecond))
	res, err := l.script.Run(ctx, l.client, []string{l.prefix + "ratelimit:" + key}, int64(interval), limit.Burst).Int64Slice()
	if err != nil {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: rate limit: %w", err)
	}
	if len(res) != 4 {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: rate limit: unexpected reply %v", res)
	}
	return ratelimit.Decision{
		Allowed:    res[0] == 1,
		Limit:      limit.Burst,
		Remaining:  int(max(0, res[1])),
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
		Reset:      time.Duration(res[3]) * time.Microsecond,
	}, nil
}
