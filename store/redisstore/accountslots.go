package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

var _ jobsdriver.AccountSlots = (*Store)(nil)

// An account's jobs being validated are the sorted set "slots:ACCOUNT"
// in the account's shard: holder → expiry (Unix ms, the server's clock).

// scriptAcquireSlot takes a slot. KEYS: slots:ACCOUNT. ARGV: holder,
// limit, ttl (ms). Returns 1 when taken.
var scriptAcquireSlot = script(`
local now = math.floor(now_us() / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// AcquireSlot implements [jobsdriver.AccountSlots]: one script in the
// account's shard.
func (s *Store) AcquireSlot(ctx context.Context, account, holder string, limit int, ttl time.Duration) (bool, error) {
	if err := checkCtx(ctx, "acquire slot"); err != nil {
		return false, err
	}
	n, err := s.run(ctx, scriptAcquireSlot, []string{s.acctKey(account, "slots:"+account)},
		holder, strconv.Itoa(limit), strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)).Int()
	if err != nil {
		return false, s.wrap(ctx, "acquire slot", err)
	}
	return n == 1, nil
}

// ReleaseSlot implements [jobsdriver.AccountSlots].
func (s *Store) ReleaseSlot(ctx context.Context, account, holder string) error {
	if err := checkCtx(ctx, "release slot"); err != nil {
		return err
	}
	return s.wrap(ctx, "release slot", s.rdb.ZRem(ctx, s.acctKey(account, "slots:"+account), holder).Err())
}
