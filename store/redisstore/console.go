package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
)

var _ store.Tokens = (*Store)(nil)

// ConfirmAccount implements [store.Accounts]. The account lives in the
// global slot and its ledger in its shard, so the held grant is written
// to the ledger first, under the signup grant's idempotency key (writing
// it twice gives it once), and then cleared: a crash between the two
// leaves the grant to be written again, which changes nothing. The call
// that clears it reports the credits; a concurrent one reports 0.
func (s *Store) ConfirmAccount(ctx context.Context, id string) (int64, error) {
	if err := checkCtx(ctx, "confirm account"); err != nil {
		return 0, err
	}
	key := s.key("acct:" + id)
	vals, err := s.rdb.HMGet(ctx, key, "id", "held").Result()
	if err != nil {
		return 0, s.wrap(ctx, "confirm account", err)
	}
	if vals[0] == nil {
		return 0, store.ErrNotFound
	}
	heldText, ok := vals[1].(string)
	if !ok {
		return 0, nil
	}
	held, err := strconv.ParseInt(heldText, 10, 64)
	if err != nil || held < 0 {
		return 0, fmt.Errorf("%w: account %s holds %q", ErrBadData, id, heldText)
	}
	if held > 0 {
		if err := s.run(ctx, scriptApply, s.creditKeys(id), id, heldText, "signup", "signup", "signup").Err(); err != nil {
			return 0, s.wrap(ctx, "confirm account", err)
		}
	}
	n, err := s.rdb.HDel(ctx, key, "held").Result()
	if err != nil {
		return 0, s.wrap(ctx, "confirm account", err)
	}
	if n == 0 {
		return 0, nil
	}
	return held, nil
}

// scriptCreateToken stores a token unless its account is missing.
// KEYS: acct:ACCOUNT, tok:HASH. ARGV: purpose, account, expiry (ms since
// the epoch).
var scriptCreateToken = script(`
expect(KEYS[2], 'hash')
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'purpose', ARGV[1], 'account', ARGV[2], 'exp', ARGV[3])
redis.call('PEXPIREAT', KEYS[2], ARGV[3])
return 1
`)

// scriptTakeToken deletes a token of the purpose and returns its account
// and expiry, or false. KEYS: tok:HASH. ARGV: purpose.
var scriptTakeToken = script(`
local f = redis.call('HMGET', KEYS[1], 'purpose', 'account', 'exp')
if not f[1] or f[1] ~= ARGV[1] then return false end
redis.call('DEL', KEYS[1])
return {f[2], f[3]}
`)

// CreateToken implements [store.Tokens]: a hash tok:HASH expiring with
// the token.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if err := checkCtx(ctx, "create token"); err != nil {
		return err
	}
	if !time.Now().Before(t.Expiry) {
		return nil
	}
	err := s.run(ctx, scriptCreateToken, []string{s.key("acct:" + t.AccountID), s.key("tok:" + t.Hash)},
		string(t.Purpose), t.AccountID, strconv.FormatInt(t.Expiry.UnixMilli(), 10)).Err()
	if err != nil {
		if c, _ := code(err); c == "NOTFOUND" {
			return store.ErrNotFound
		}
		return s.wrap(ctx, "create token", err)
	}
	return nil
}

// TakeToken implements [store.Tokens]: one script reads and deletes the
// token.
func (s *Store) TakeToken(ctx context.Context, purpose store.TokenPurpose, hash string) (store.Token, error) {
	if err := checkCtx(ctx, "take token"); err != nil {
		return store.Token{}, err
	}
	if len(hash) != 64 {
		return store.Token{}, store.ErrTokenInvalid
	}
	res, err := s.run(ctx, scriptTakeToken, []string{s.key("tok:" + hash)}, string(purpose)).StringSlice()
	if errors.Is(err, redis.Nil) {
		return store.Token{}, store.ErrTokenInvalid
	}
	if err != nil {
		return store.Token{}, s.wrap(ctx, "take token", err)
	}
	if len(res) != 2 {
		return store.Token{}, ErrBadData
	}
	ms, err := strconv.ParseInt(res[1], 10, 64)
	if err != nil {
		return store.Token{}, ErrBadData
	}
	t := store.Token{Hash: hash, Purpose: purpose, AccountID: res[0], Expiry: time.UnixMilli(ms)}
	if !time.Now().Before(t.Expiry) {
		return store.Token{}, store.ErrTokenInvalid
	}
	return t, nil
}
