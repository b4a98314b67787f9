package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
)

var _ store.Notices = (*Store)(nil)

// The finish mail's keys, in the store's own slot beside the accounts:
// the choice is the field finishmail of acct:ID ("1" when chosen); each
// batch's notice is a hash notice:BATCH (account, token, attempts, done),
// expiring store.NoticeKeep after it is done; notices is a sorted set of
// the pending notices' batch ids by due time (milliseconds since the
// epoch), a claim's lease's end while claimed.

// scriptSetFinishMail sets an account's choice. KEYS: acct:ID. ARGV: 0|1.
var scriptSetFinishMail = script(`
expect(KEYS[1], 'hash')
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
redis.call('HSET', KEYS[1], 'finishmail', ARGV[1])
return 1
`)

// scriptAddNotice adds a batch's notice unless it has one. KEYS:
// notice:BATCH, notices. ARGV: account, batch, now (ms).
var scriptAddNotice = script(`
expect(KEYS[1], 'hash')
expect(KEYS[2], 'zset')
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'account', ARGV[1], 'token', '', 'attempts', 0, 'done', 0)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
`)

// scriptClaimNotice claims one notice if it is still due. KEYS:
// notice:BATCH, notices. ARGV: batch, now (ms), lease end (ms), token.
// Returns {account, attempts}, or false.
var scriptClaimNotice = script(`
local due = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not due or tonumber(due) > tonumber(ARGV[2]) then return false end
local f = redis.call('HMGET', KEYS[1], 'account', 'token', 'attempts', 'done')
if not f[1] or f[4] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
local attempts = tonumber(f[3]) or 0
if f[2] and f[2] ~= '' then attempts = attempts + 1 end
redis.call('HSET', KEYS[1], 'token', ARGV[4], 'attempts', attempts)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return {f[1], tostring(attempts)}
`)

// scriptSettleNotice ends a claim: done (ARGV[3] "done", kept ARGV[4] ms)
// or delayed (due at ARGV[4] ms, one attempt more). KEYS: notice:BATCH,
// notices. ARGV: batch, token. Returns 0 when the claim is not held.
var scriptSettleNotice = script(`
local f = redis.call('HMGET', KEYS[1], 'token', 'done')
if not f[1] or f[1] == '' or f[1] ~= ARGV[2] or f[2] == '1' then return 0 end
if ARGV[3] == 'done' then
  redis.call('HSET', KEYS[1], 'done', 1, 'token', '')
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], 'token', '')
  redis.call('HINCRBY', KEYS[1], 'attempts', 1)
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
end
return 1
`)

// SetFinishMail implements [store.Notices]: a field of the account's
// hash.
func (s *Store) SetFinishMail(ctx context.Context, accountID string, on bool) error {
	if err := checkCtx(ctx, "set finish mail"); err != nil {
		return err
	}
	v := "0"
	if on {
		v = "1"
	}
	err := s.run(ctx, scriptSetFinishMail, []string{s.key("acct:" + accountID)}, v).Err()
	if err != nil {
		if c, _ := code(err); c == "NOTFOUND" {
			return store.ErrNotFound
		}
		return s.wrap(ctx, "set finish mail", err)
	}
	return nil
}

// FinishMail implements [store.Notices].
func (s *Store) FinishMail(ctx context.Context, accountID string) (bool, error) {
	if err := checkCtx(ctx, "finish mail"); err != nil {
		return false, err
	}
	res, err := s.rdb.HMGet(ctx, s.key("acct:"+accountID), "email", "finishmail").Result()
	if err != nil {
		return false, s.wrap(ctx, "finish mail", err)
	}
	if len(res) != 2 || res[0] == nil {
		return false, store.ErrNotFound
	}
	return res[1] == "1", nil
}

// AddNotice implements [store.Notices]: one script on the notice and the
// set of pending ones.
func (s *Store) AddNotice(ctx context.Context, accountID, batchID string) error {
	if err := checkCtx(ctx, "add notice"); err != nil {
		return err
	}
	err := s.run(ctx, scriptAddNotice, []string{s.key("notice:" + batchID), s.key("notices")},
		accountID, batchID, strconv.FormatInt(time.Now().UnixMilli(), 10)).Err()
	if err != nil {
		return s.wrap(ctx, "add notice", err)
	}
	return nil
}

// ClaimNotices implements [store.Notices]: the due batch ids are read,
// then each is claimed by a script that checks it is still due, so that
// two instances never claim one notice.
func (s *Store) ClaimNotices(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Notice, error) {
	if err := checkCtx(ctx, "claim notices"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	nowMS := strconv.FormatInt(now.UnixMilli(), 10)
	ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.key("notices"), Start: "-inf", Stop: nowMS, ByScore: true, Count: int64(limit)}).Result()
	if err != nil {
		return nil, s.wrap(ctx, "claim notices", err)
	}
	end := strconv.FormatInt(now.Add(lease).UnixMilli(), 10)
	prefix := uuid.NewString() + ":"
	var out []store.Notice
	for _, id := range ids {
		token := prefix + id
		res, err := s.run(ctx, scriptClaimNotice, []string{s.key("notice:" + id), s.key("notices")}, id, nowMS, end, token).StringSlice()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return out, s.wrap(ctx, "claim notices", err)
		}
		if len(res) != 2 {
			return out, ErrBadData
		}
		attempts, err := strconv.Atoi(res[1])
		if err != nil {
			return out, ErrBadData
		}
		out = append(out, store.Notice{AccountID: res[0], BatchID: id, Token: token, Attempts: attempts})
	}
	return out, nil
}

// DoneNotice implements [store.Notices]: a compare-and-set on the
// claim's token; the notice expires [store.NoticeKeep] later.
func (s *Store) DoneNotice(ctx context.Context, n store.Notice) error {
	return s.settle(ctx, "notice done", n, "done", strconv.FormatInt(store.NoticeKeep.Milliseconds(), 10))
}

// DelayNotice implements [store.Notices]: a compare-and-set on the
// claim's token.
func (s *Store) DelayNotice(ctx context.Context, n store.Notice, due time.Time) error {
	return s.settle(ctx, "delay notice", n, "delay", strconv.FormatInt(due.UnixMilli(), 10))
}

func (s *Store) settle(ctx context.Context, op string, n store.Notice, how, arg string) error {
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	ok, err := s.run(ctx, scriptSettleNotice, []string{s.key("notice:" + n.BatchID), s.key("notices")}, n.BatchID, n.Token, how, arg).Int()
	if err != nil {
		return s.wrap(ctx, op, err)
	}
	if ok == 0 {
		return store.ErrNoticeLost
	}
	return nil
}
