package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/store"
)

// CreateAccount implements [store.Accounts]. The account lives in the
// global slot with the email index, its ledger in its shard: the signup
// grant is written first, under the fresh id, then the account and its
// email index entry by one script. An account is never seen without its
// grant; a signup that loses a race for its email, or dies between the
// two, leaves the grant on an id no account has.
func (s *Store) CreateAccount(ctx context.Context, p store.CreateAccountParams) (store.Account, error) {
	if err := checkCtx(ctx, "create account"); err != nil {
		return store.Account{}, err
	}
	if p.Email == "" {
		return store.Account{}, store.ErrInvalidEmail
	}
	// A server that lost the store's data takes no new accounts: a
	// sign-up could take a lost customer's email until the data is back.
	if err := s.checkMarker(ctx); err != nil {
		return store.Account{}, err
	}
	a := store.Account{ID: newAccountID(), Email: p.Email, Plan: p.PlanOrDefault()}
	norm := store.NormalizeEmail(a.Email)
	taken, err := s.rdb.HExists(ctx, s.key("emails"), norm).Result()
	if err != nil {
		return store.Account{}, s.wrap(ctx, "create account", err)
	}
	if taken {
		return store.Account{}, store.ErrEmailTaken
	}
	// The signup grant is written first, in the account's shard; an
	// unconfirmed account holds it back until its email is confirmed.
	held := ""
	if grant := p.Credits(); grant > 0 {
		if p.Unconfirmed {
			held = strconv.FormatInt(grant, 10)
		} else if err := s.run(ctx, scriptApply, s.creditKeys(a.ID), a.ID, strconv.FormatInt(grant, 10), "signup", "signup", "signup").Err(); err != nil {
			return store.Account{}, s.wrap(ctx, "create account", err)
		}
	}
	keys := []string{s.key("acct:" + a.ID), s.key("emails")}
	t, err := s.run(ctx, scriptCreateAccount, keys, a.ID, a.Email, norm, a.Plan, p.PasswordHash, held).Text()
	if err != nil {
		if c, _ := code(err); c == "EMAILTAKEN" {
			return store.Account{}, store.ErrEmailTaken
		}
		return store.Account{}, s.wrap(ctx, "create account", err)
	}
	if a.CreatedAt, err = micros(t); err != nil {
		return store.Account{}, err
	}
	a.Unconfirmed = p.Unconfirmed
	return a, nil
}

// PasswordHash implements [store.Passwords]: the pw field of the
// account's hash.
func (s *Store) PasswordHash(ctx context.Context, accountID string) (string, error) {
	if err := checkCtx(ctx, "password hash"); err != nil {
		return "", err
	}
	f, err := s.rdb.HMGet(ctx, s.key("acct:"+accountID), "id", "pw").Result()
	if err != nil {
		return "", s.wrap(ctx, "password hash", err)
	}
	if f[0] == nil {
		return "", store.ErrNotFound
	}
	hash, _ := f[1].(string)
	return hash, nil
}

// SetPasswordHash implements [store.Passwords].
func (s *Store) SetPasswordHash(ctx context.Context, accountID, hash string) error {
	if err := checkCtx(ctx, "set password hash"); err != nil {
		return err
	}
	err := s.run(ctx, scriptSetPassword, []string{s.key("acct:" + accountID)}, hash).Err()
	if err != nil {
		if c, _ := code(err); c == "NOTFOUND" {
			return store.ErrNotFound
		}
		return s.wrap(ctx, "set password hash", err)
	}
	return nil
}

// GetAccount implements [store.Accounts].
func (s *Store) GetAccount(ctx context.Context, id string) (store.Account, error) {
	if err := checkCtx(ctx, "get account"); err != nil {
		return store.Account{}, err
	}
	m, err := s.rdb.HGetAll(ctx, s.key("acct:"+id)).Result()
	if err != nil {
		return store.Account{}, s.wrap(ctx, "get account", err)
	}
	if len(m) == 0 {
		return store.Account{}, store.ErrNotFound
	}
	t, err := micros(m["created"])
	if err != nil {
		return store.Account{}, err
	}
	_, held := m["held"]
	return store.Account{ID: m["id"], Email: m["email"], Plan: m["plan"], CreatedAt: t, Unconfirmed: held}, nil
}

// GetAccountByEmail implements [store.Accounts].
func (s *Store) GetAccountByEmail(ctx context.Context, email string) (store.Account, error) {
	if err := checkCtx(ctx, "get account"); err != nil {
		return store.Account{}, err
	}
	id, err := s.rdb.HGet(ctx, s.key("emails"), store.NormalizeEmail(email)).Result()
	if errors.Is(err, redis.Nil) {
		// No such email, or a server that lost every account: a sign-in
		// must not be told "wrong password" then.
		if err := s.checkMarker(ctx); err != nil {
			return store.Account{}, err
		}
		return store.Account{}, store.ErrNotFound
	}
	if err != nil {
		return store.Account{}, s.wrap(ctx, "get account", err)
	}
	return s.GetAccount(ctx, id)
}

// CreateKey implements [store.Accounts]. Only the secret's hash and display
// prefix are stored.
func (s *Store) CreateKey(ctx context.Context, p store.CreateKeyParams) (store.Key, string, error) {
	if err := checkCtx(ctx, "create key"); err != nil {
		return store.Key{}, "", err
	}
	secret, hash, prefix, perms, err := store.NewKeyMaterial(p)
	if err != nil {
		return store.Key{}, "", err
	}
	k := store.Key{
		ID:          uuid.NewString(),
		AccountID:   p.AccountID,
		Name:        p.Name,
		Prefix:      prefix,
		Hash:        hash,
		Permissions: perms,
	}
	keys := []string{s.key("acct:" + p.AccountID), s.key("key:" + k.ID), s.key("keyhash"), s.key("keys:" + p.AccountID)}
	// The script counts the account's active keys by their hashes, named
	// like this key's hash with another id.
	t, err := s.run(ctx, scriptCreateKey, keys, k.ID, k.AccountID, k.Name, k.Prefix, k.Hash, joinPerms(perms),
		max(p.MaxActive, 0), strings.TrimSuffix(keys[1], k.ID)).Text()
	if err != nil {
		switch c, _ := code(err); c {
		case "NOTFOUND":
			return store.Key{}, "", store.ErrNotFound
		case "KEYEXISTS":
			return store.Key{}, "", store.ErrKeyExists
		case "KEYLIMIT":
			return store.Key{}, "", store.ErrKeyLimit
		}
		return store.Key{}, "", s.wrap(ctx, "create key", err)
	}
	if k.CreatedAt, err = micros(t); err != nil {
		return store.Key{}, "", err
	}
	return k, secret, nil
}

func joinPerms(ps []store.Permission) string {
	ss := make([]string, len(ps))
	for i, p := range ps {
		ss[i] = string(p)
	}
	return strings.Join(ss, ",")
}

func splitPerms(s string) []store.Permission {
	out := []store.Permission{}
	for p := range strings.SplitSeq(s, ",") {
		if p != "" {
			out = append(out, store.Permission(p))
		}
	}
	return out
}

// keyFromHash builds a Key from its stored fields.
func keyFromHash(m map[string]string) (store.Key, error) {
	k := store.Key{
		ID:          m["id"],
		AccountID:   m["account"],
		Name:        m["name"],
		Prefix:      m["prefix"],
		Hash:        m["hash"],
		Permissions: splitPerms(m["perms"]),
	}
	var err error
	if k.CreatedAt, err = micros(m["created"]); err != nil {
		return store.Key{}, err
	}
	if k.LastUsedAt, err = micros(m["used"]); err != nil {
		return store.Key{}, err
	}
	if k.RevokedAt, err = micros(m["revoked"]); err != nil {
		return store.Key{}, err
	}
	if k.ID == "" || k.CreatedAt.IsZero() {
		return store.Key{}, fmt.Errorf("%w: key record without id or creation time", ErrBadData)
	}
	return k, nil
}

// ListKeys implements [store.Accounts].
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	if err := checkCtx(ctx, "list keys"); err != nil {
		return nil, err
	}
	ids, err := s.rdb.LRange(ctx, s.key("keys:"+accountID), 0, -1).Result()
	if err != nil {
		return nil, s.wrap(ctx, "list keys", err)
	}
	if len(ids) == 0 {
		return []store.Key{}, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.key("key:"+id))
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(ctx, "list keys", err)
	}
	out := make([]store.Key, 0, len(ids))
	for _, c := range cmds {
		k, err := keyFromHash(c.Val())
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// RevokeKey implements [store.Accounts].
func (s *Store) RevokeKey(ctx context.Context, accountID, keyID string) error {
	if err := checkCtx(ctx, "revoke key"); err != nil {
		return err
	}
	err := s.run(ctx, scriptRevokeKey, []string{s.key("key:" + keyID)}, accountID).Err()
	if c, _ := code(err); c == "NOTFOUND" {
		return store.ErrNotFound
	}
	return s.wrap(ctx, "revoke key", err)
}

// Authenticate implements [store.Accounts]: one script looks the key up by
// the secret's SHA-256 hash, refuses a revoked key and records the use.
func (s *Store) Authenticate(ctx context.Context, secret string) (store.Key, error) {
	if err := checkCtx(ctx, "authenticate"); err != nil {
		return store.Key{}, err
	}
	if store.CheckSecret(secret) != nil {
		return store.Key{}, store.ErrInvalidKey
	}
	if err := s.Setup(ctx); err != nil {
		return store.Key{}, err
	}
	f, err := s.run(ctx, scriptAuthenticate, []string{s.key("keyhash"), s.key(markerName)}, s.base, store.HashSecret(secret), s.markerValue()).StringSlice()
	if errors.Is(err, redis.Nil) {
		return store.Key{}, store.ErrInvalidKey
	}
	if c, _ := code(err); c == "LOST" {
		return store.Key{}, s.dataLost(ctx)
	}
	if err != nil {
		return store.Key{}, s.wrap(ctx, "authenticate", err)
	}
	m := make(map[string]string, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return keyFromHash(m)
}

// scriptSetPlan sets an existing account's plan, failing NOTFOUND.
var scriptSetPlan = script(`
expect(KEYS[1], 'hash')
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
redis.call('HSET', KEYS[1], 'plan', ARGV[1])
return 1
`)

// SetPlan implements [store.PlanSetter]: the plan field of the account's
// hash, set only while the hash exists.
func (s *Store) SetPlan(ctx context.Context, id, plan string) error {
	if err := store.CheckPlan(plan); err != nil {
		return err
	}
	if err := checkCtx(ctx, "set plan"); err != nil {
		return err
	}
	if err := s.checkMarker(ctx); err != nil {
		return err
	}
	if err := s.run(ctx, scriptSetPlan, []string{s.key("acct:" + id)}, plan).Err(); err != nil {
		if c, _ := code(err); c == "NOTFOUND" {
			return store.ErrNotFound
		}
		return s.wrap(ctx, "set plan", err)
	}
	return nil
}
