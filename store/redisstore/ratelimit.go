package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/store/ratelimit"
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

// RateLimiter is a [ratelimit.Limiter], [ratelimit.MultiLimiter] and
// [ratelimit.Counter] whose buckets and quotas live in Redis, so that
// every instance of a deployment shares one limit per key. Each decision
// is one Lua script run (GCRA for buckets, a counter per window for
// quotas), atomic on the server and timed by the server's clock, so
// instances' clocks need not agree. It is safe for
// concurrent use; the client is the host's and is not closed.
//
// Where a bucket or quota is stored follows its key's [ratelimit.Group]:
// the keys of one group share a cluster slot, so that a multi-bucket call
// stays one script, and different groups spread over the slots, so that
// no one master runs every limit of a deployment.
type RateLimiter struct {
	client       redis.UniversalClient
	prefix       string
	bases        *[shardCount]string // a store's shards, or nil
	script       *redis.Script
	allScript    *redis.Script
	takeScript   *redis.Script
	refundScript *redis.Script
}

// NewRateLimiter returns a limiter storing its buckets in client under keys
// that start with prefix (for example "validmail:"), followed by
// "ratelimit:" and the limited key, and its quotas under prefix, "quota:",
// the key, ":" and the window's number. On a cluster, where a prefix
// without braces leaves the limited key's own braces as the hash tag, a
// key's slot is that of its group. (A prefix with braces puts every key
// in the prefix's slot.)
func NewRateLimiter(client redis.UniversalClient, prefix string) *RateLimiter {
	return &RateLimiter{
		client: client, prefix: prefix,
		script: redis.NewScript(gcraScript), allScript: redis.NewScript(gcraAllScript),
		takeScript: redis.NewScript(quotaTakeScript), refundScript: redis.NewScript(quotaRefundScript),
	}
}

// rateLimiter returns the store's limiter: a key of group g is stored in
// the shard an account named g would be in, under the shard's hash tag.
// So an account's buckets, named with its id as their group, sit in the
// account's shard beside its other keys, and the keys of client addresses
// and the like, each its own group, spread over the shards.
func (s *Store) rateLimiter() *RateLimiter {
	l := NewRateLimiter(s.rdb, s.base)
	l.bases = &s.bases
	return l
}

// base returns the start of the names of key's bucket and quota.
func (l *RateLimiter) base(key string) string {
	if l.bases == nil {
		return l.prefix
	}
	return l.bases[accountShard(ratelimit.Group(key))]
}

// bucketKey is the name of key's bucket.
func (l *RateLimiter) bucketKey(key string) string { return l.base(key) + "ratelimit:" + key }

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
	res, err := l.script.Run(ctx, l.client, []string{l.bucketKey(key)}, interval, limit.Burst).Int64Slice()
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
		keys = append(keys, l.bucketKey(r.Key))
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

var _ ratelimit.Counter = (*RateLimiter)(nil)

// quotaTakeScript takes units from a fixed-window quota: one key per key
// and window, holding the units taken, expiring when the window ends.
// The window is numbered by the server's clock.
//
// KEYS[1]: the quota's key, without its window. ARGV[1]: units to take
// (0 reads). ARGV[2]: the limit. ARGV[3]: the window (µs).
// Returns {allowed (0|1), remaining, reset (µs), window}.
const quotaTakeScript = `
local n = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local size = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local win = math.floor(now / size)
local reset = (win + 1) * size - now
local key = KEYS[1] .. ':' .. string.format('%.0f', win)
local used = tonumber(redis.call('GET', key) or 0)
if n == 0 or used + n > limit then
  return {n == 0 and 1 or 0, math.max(0, limit - used), reset, win}
end
redis.call('SET', key, used + n, 'PX', math.max(1, math.ceil(reset / 1000)))
return {1, limit - used - n, reset, win}
`

// quotaRefundScript gives units back to a window that has not ended.
//
// KEYS[1]: the quota's key with its window. ARGV[1]: units.
const quotaRefundScript = `
local used = tonumber(redis.call('GET', KEYS[1]))
if used == nil then return 0 end
local left = math.max(0, used - tonumber(ARGV[1]))
redis.call('SET', KEYS[1], left, 'KEEPTTL')
return left
`

// quotaKey is the name of key's quota counters, before the window.
func (l *RateLimiter) quotaKey(key string) string { return l.base(key) + "quota:" + key }

// Take implements [ratelimit.Counter]: one script run, atomic on the
// server, over a key per window that expires when the window ends.
// Taking 0 units reads without writing. An unlimited quota is allowed
// without a round trip.
func (l *RateLimiter) Take(ctx context.Context, key string, n int, q ratelimit.Quota) (ratelimit.QuotaDecision, error) {
	if err := ratelimit.CheckTake(n, q); err != nil {
		return ratelimit.QuotaDecision{}, fmt.Errorf("redisstore: %w", err)
	}
	if q.Unlimited() {
		return ratelimit.QuotaDecision{Allowed: true, Limit: q.Limit}, nil
	}
	res, err := l.takeScript.Run(ctx, l.client, []string{l.quotaKey(key)}, n, q.Limit, q.Window.Microseconds()).Int64Slice()
	if err != nil {
		return ratelimit.QuotaDecision{}, fmt.Errorf("redisstore: quota: %w", err)
	}
	if len(res) != 4 {
		return ratelimit.QuotaDecision{}, fmt.Errorf("redisstore: quota: unexpected reply %v", res)
	}
	return ratelimit.QuotaDecision{
		Allowed:   res[0] == 1,
		Limit:     q.Limit,
		Remaining: int(res[1]),
		Reset:     time.Duration(res[2]) * time.Microsecond,
		Window:    res[3],
	}, nil
}

// Refund implements [ratelimit.Counter]: one script run on the window's
// key, which is gone once the window ended.
func (l *RateLimiter) Refund(ctx context.Context, key string, n int, q ratelimit.Quota, window int64) error {
	if err := ratelimit.CheckTake(n, q); err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	if q.Unlimited() || n == 0 {
		return nil
	}
	k := l.quotaKey(key) + ":" + strconv.FormatInt(window, 10)
	if err := l.refundScript.Run(ctx, l.client, []string{k}, n).Err(); err != nil {
		return fmt.Errorf("redisstore: quota refund: %w", err)
	}
	return nil
}
