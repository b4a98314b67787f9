package redisstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
)

var _ store.TwoFactor = (*Store)(nil)

// Second factors live in the store's own slot, beside the accounts and
// members: "totp:LOGIN" is a hash of the login's account, secret and
// last used step, "totp-rc:LOGIN" the set of its unused recovery codes'
// hashes, and "totp-team" the hash of the accounts that require a
// second factor of their team (account → "1").

// scriptEnableTOTP stores a login's second factor unless it has one. KEYS: acct:ACCOUNT,
// totp:LOGIN, totp-rc:LOGIN. ARGV: account, secret, last step, then the
// recovery hashes.
var scriptEnableTOTP = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
if redis.call('EXISTS', KEYS[2]) == 1 then fail('EXISTS') end
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[2], 'account', ARGV[1], 'secret', ARGV[2], 'last', ARGV[3])
for i = 4, #ARGV do redis.call('SADD', KEYS[3], ARGV[i]) end
return 1
`)

// scriptUseStep records a later step as the last used. KEYS: totp:LOGIN.
// ARGV: step. Returns 1 when recorded, 0 for a step not later.
var scriptUseStep = script(`
local last = redis.call('HGET', KEYS[1], 'last')
if not last then fail('NOTFOUND') end
if tonumber(ARGV[1]) <= tonumber(last) then return 0 end
redis.call('HSET', KEYS[1], 'last', ARGV[1])
return 1
`)

// scriptUseRecovery removes a recovery code's hash. KEYS: totp:LOGIN,
// totp-rc:LOGIN. ARGV: hash. Returns 1 when it was there.
var scriptUseRecovery = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
return redis.call('SREM', KEYS[2], ARGV[1])
`)

// scriptSetTeamTOTP records an account's requirement. KEYS:
// acct:ACCOUNT, totp-team. ARGV: account, "1" or "".
var scriptSetTeamTOTP = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
if ARGV[2] == '1' then redis.call('HSET', KEYS[2], ARGV[1], '1') else redis.call('HDEL', KEYS[2], ARGV[1]) end
return 1
`)

// EnableTOTP implements [store.TwoFactor].
func (s *Store) EnableTOTP(ctx context.Context, t store.TOTP) error {
	if err := checkCtx(ctx, "enable totp"); err != nil {
		return err
	}
	if len(t.RecoveryHashes) > store.MaxRecoveryCodes {
		return store.ErrTooManyCodes
	}
	args := []any{t.AccountID, t.Secret, strconv.FormatInt(t.LastStep, 10)}
	for _, h := range t.RecoveryHashes {
		args = append(args, h)
	}
	err := s.run(ctx, scriptEnableTOTP, []string{s.key("acct:" + t.AccountID), s.key("totp:" + t.LoginID), s.key("totp-rc:" + t.LoginID)}, args...).Err()
	switch c, _ := code(err); c {
	case "NOTFOUND":
		return store.ErrNotFound
	case "EXISTS":
		return store.ErrTOTPExists
	}
	return s.wrap(ctx, "enable totp", err)
}

// TOTP implements [store.TwoFactor].
func (s *Store) TOTP(ctx context.Context, loginID string) (store.TOTP, error) {
	if err := checkCtx(ctx, "totp"); err != nil {
		return store.TOTP{}, err
	}
	pipe := s.rdb.Pipeline()
	f := pipe.HMGet(ctx, s.key("totp:"+loginID), "account", "secret", "last")
	rc := pipe.SMembers(ctx, s.key("totp-rc:"+loginID))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return store.TOTP{}, s.wrap(ctx, "totp", err)
	}
	v := f.Val()
	account, _ := v[0].(string)
	if account == "" {
		return store.TOTP{}, store.ErrNotFound
	}
	secret, _ := v[1].(string)
	last, _ := v[2].(string)
	step, err := strconv.ParseInt(last, 10, 64)
	if err != nil {
		return store.TOTP{}, s.wrap(ctx, "totp", errors.Join(ErrBadData, err))
	}
	return store.TOTP{LoginID: loginID, AccountID: account, Secret: secret, LastStep: step, RecoveryHashes: rc.Val()}, nil
}

// DisableTOTP implements [store.TwoFactor].
func (s *Store) DisableTOTP(ctx context.Context, loginID string) error {
	if err := checkCtx(ctx, "disable totp"); err != nil {
		return err
	}
	n, err := s.rdb.Del(ctx, s.key("totp:"+loginID), s.key("totp-rc:"+loginID)).Result()
	if err != nil {
		return s.wrap(ctx, "disable totp", err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// UseTOTPStep implements [store.TwoFactor].
func (s *Store) UseTOTPStep(ctx context.Context, loginID string, step int64) (bool, error) {
	if err := checkCtx(ctx, "use totp step"); err != nil {
		return false, err
	}
	n, err := s.run(ctx, scriptUseStep, []string{s.key("totp:" + loginID)}, strconv.FormatInt(step, 10)).Int()
	if c, _ := code(err); c == "NOTFOUND" {
		return false, store.ErrNotFound
	}
	if err != nil {
		return false, s.wrap(ctx, "use totp step", err)
	}
	return n == 1, nil
}

// UseRecoveryCode implements [store.TwoFactor].
func (s *Store) UseRecoveryCode(ctx context.Context, loginID, hash string) (bool, error) {
	if err := checkCtx(ctx, "use recovery code"); err != nil {
		return false, err
	}
	n, err := s.run(ctx, scriptUseRecovery, []string{s.key("totp:" + loginID), s.key("totp-rc:" + loginID)}, hash).Int()
	if c, _ := code(err); c == "NOTFOUND" {
		return false, store.ErrNotFound
	}
	if err != nil {
		return false, s.wrap(ctx, "use recovery code", err)
	}
	return n == 1, nil
}

// SetTeamTOTP implements [store.TwoFactor].
func (s *Store) SetTeamTOTP(ctx context.Context, accountID string, required bool) error {
	if err := checkCtx(ctx, "set team totp"); err != nil {
		return err
	}
	flag := ""
	if required {
		flag = "1"
	}
	err := s.run(ctx, scriptSetTeamTOTP, []string{s.key("acct:" + accountID), s.key("totp-team")}, accountID, flag).Err()
	if c, _ := code(err); c == "NOTFOUND" {
		return store.ErrNotFound
	}
	return s.wrap(ctx, "set team totp", err)
}

// TeamTOTP implements [store.TwoFactor].
func (s *Store) TeamTOTP(ctx context.Context, accountID string) (bool, error) {
	if err := checkCtx(ctx, "team totp"); err != nil {
		return false, err
	}
	v, err := s.rdb.HGet(ctx, s.key("totp-team"), accountID).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap(ctx, "team totp", err)
	}
	return v == "1", nil
}
