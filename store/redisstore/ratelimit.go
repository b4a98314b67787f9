package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/httpapi/ratelimit"
)

var _ ratelimit.MultiLimiter = (*RateLimiter)(nil)

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

// gcraAllScript is gcraScript over several buckets, all or none: every
// bucket is read first, and tokens are taken only if each bucket has one.
//
// KEYS: the buckets. ARGV: interval and burst of each bucket in turn.
// Returns one {allowed, remaining, retry after, reset} per bucket; a
// bucket that would allow reports allowed (1) even when another refused,
// with its tokens untouched.
const gcraAllScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
local all = true
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2*i-1])
  local burst = tonumber(ARGV[2*i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  tats[i] = tat
  if tat + interval - interval * burst > now then all = false end
end
local out = {}
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2*i-1])
  local burst = tonumber(ARGV[2*i])
  local tat = tats[i]
  local tolerance = interval * burst
  local newtat = tat + interval
  local allowat = newtat - tolerance
  if allowat > now then
    out[i] = {0, 0, math.ceil(allowat - now), math.ceil(tat - now)}
  elseif all then
    redis.call('SET', KEYS[i], string.format('%.0f', newtat), 'PX', math.max(1, math.ceil((newtat - now) / 1000)))
    out[i] = {1, math.floor((tolerance - (newtat - now)) / interval), 0, math.ceil(newtat - now)}
  else
    out[i] = {1, math.floor((tolerance - (tat - now)) / interval), 0, math.ceil(tat - now)}
  end
end
return out
`

// RateLimiter is a [ratelimit.Limiter] whose buckets live in Redis, so
// that every instance of a deployment shares one limit per key. Each
// decision is one Lua script run (GCRA), atomic on the server and timed by
// the server's clock, so instances' clocks need not agree. It is safe for
// concurrent use; the client is the host's and is not closed.
type RateLimiter struct {
	client    redis.UniversalClient
	prefix    string
	script    *redis.Script
	allScript *redis.Script
}

// NewRateLimiter returns a limiter storing its buckets in client under keys
// that start with prefix (for example "validmail:"), followed by
// "ratelimit:" and the limited key.
func NewRateLimiter(client redis.UniversalClient, prefix string) *RateLimiter {
	return &RateLimiter{client: client, prefix: prefix, script: redis.NewScript(gcraScript), allScript: redis.NewScript(gcraAllScript)}
}

// Allow implements [ratelimit.Limiter]. An unlimited limit (negative
// PerSecond) is allowed without a round trip.
func (l *RateLimiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Decision, error) {
	if limit.Unlimited() {
		return ratelimit.Decision{Allowed: true, Limit: limit.Burst, Remaining: limit.Burst}, nil
	}
	if err := limit.Check(); err != nil {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: %w", err)
	}
	interval := limit.Interval().Microseconds()
	res, err := l.script.Run(ctx, l.client, []string{l.prefix + "ratelimit:" + key}, interval, limit.Burst).Int64Slice()
	if err != nil {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: rate limit: %w", err)
	}
	return gcraDecision(res, limit)
}

// AllowAll implements [ratelimit.MultiLimiter]: one script run, one round
// trip, for all the limited buckets.
func (l *RateLimiter) AllowAll(ctx context.Context, reqs []ratelimit.Request) ([]ratelimit.Decision, error) {
	out, idx, err := ratelimit.Partition(reqs)
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	keys := make([]string, 0, len(idx))
	args := make([]any, 0, 2*len(idx))
	for _, i := range idx {
		r := reqs[i]
		keys = append(keys, l.prefix+"ratelimit:"+r.Key)
		args = append(args, r.Limit.Interval().Microseconds(), r.Limit.Burst)
	}
	if len(keys) == 0 {
		return out, nil
	}
	res, err := l.allScript.Run(ctx, l.client, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisstore: rate limit: %w", err)
	}
	if len(res) != len(keys) {
		return nil, fmt.Errorf("redisstore: rate limit: %d decisions for %d buckets", len(res), len(keys))
	}
	for k, v := range res {
		row, ok := v.([]any)
		nums := make([]int64, 0, 4)
		for _, x := range row {
			if n, isInt := x.(int64); isInt {
				nums = append(nums, n)
			}
		}
		if !ok {
			nums = nil
		}
		i := idx[k]
		if out[i], err = gcraDecision(nums, reqs[i].Limit); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// gcraDecision reads a script's {allowed, remaining, retry after, reset}.
func gcraDecision(res []int64, limit ratelimit.Limit) (ratelimit.Decision, error) {
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
