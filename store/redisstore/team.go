package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
)

var (
	_ store.Team     = (*Store)(nil)
	_ store.AuditLog = (*Store)(nil)
)

// Teams live in the store's own slot, beside the accounts: "team:ACCOUNT"
// is a hash from member id to the member (JSON), "members" the index
// from a member's normalized email to "ACCOUNT MEMBER", and "inv:HASH"
// an invitation, a hash expiring with it. An account without a
// "team:ACCOUNT" key (every account of a store written before teams) has
// its login as owner and no other member. The audit log of an account is
// the list "audit:ACCOUNT" in the account's shard, newest first, trimmed to
// store.MaxAuditEntries.

// Each account's invitations are indexed by the set "invs:ACCOUNT" of
// their hashes (pruned of expired ones as invitations are made), and an
// invitation keeps its normalized email ("norm"), so that a removed
// member's invitations can be found and deleted with it.

// memberRecord is a member as "team:ACCOUNT" keeps it.
type memberRecord struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Role     string `json:"role"`
	Password string `json:"pw"`
	Created  int64  `json:"created"` // Unix microseconds
}

func (r memberRecord) member(accountID string) store.Member {
	return store.Member{ID: r.ID, AccountID: accountID, Email: r.Email, Role: store.Role(r.Role),
		PasswordHash: r.Password, CreatedAt: time.UnixMicro(r.Created).UTC()}
}

// scriptInvite stores an invitation of an existing account and indexes
// it. KEYS: acct:ACCOUNT, inv:HASH, invs:ACCOUNT. ARGV: account, email,
// role, expiry (Unix ms), normalized email, the inv: key prefix, hash.
var scriptInvite = script(`
expect(KEYS[2], 'hash')
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
for _, h in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if redis.call('EXISTS', ARGV[6] .. h) == 0 then redis.call('SREM', KEYS[3], h) end
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'account', ARGV[1], 'email', ARGV[2], 'role', ARGV[3], 'exp', ARGV[4], 'norm', ARGV[5])
redis.call('PEXPIREAT', KEYS[2], ARGV[4])
redis.call('SADD', KEYS[3], ARGV[7])
return 1
`)

// scriptAccept uses up an invitation and adds its member. KEYS: inv:HASH,
// members, team:ACCOUNT, acct:ACCOUNT. ARGV: account, now (Unix ms),
// normalized email, member id, member record, most members.
var scriptAccept = script(`
local f = redis.call('HMGET', KEYS[1], 'account', 'exp')
if not f[1] or f[1] ~= ARGV[1] then fail('INVALID') end
redis.call('DEL', KEYS[1])
if tonumber(f[2]) <= tonumber(ARGV[2]) or redis.call('EXISTS', KEYS[4]) == 0 then fail('INVALID') end
if redis.call('HEXISTS', KEYS[2], ARGV[3]) == 1 then fail('EMAILTAKEN') end
if redis.call('HLEN', KEYS[3]) >= tonumber(ARGV[6]) then fail('TEAMFULL') end
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1] .. ' ' .. ARGV[4])
return 1
`)

// scriptRemoveMember removes a member, its email's index entry and the
// account's invitations of its email. KEYS: team:ACCOUNT, members,
// invs:ACCOUNT. ARGV: member id, normalized email, the inv: key prefix.
var scriptRemoveMember = script(`
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then fail('NOTFOUND') end
redis.call('HDEL', KEYS[2], ARGV[2])
for _, h in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local f = redis.call('HMGET', ARGV[3] .. h, 'norm', 'email')
  if not f[2] then
    redis.call('SREM', KEYS[3], h)
  elseif (f[1] or string.lower(f[2])) == ARGV[2] then
    redis.call('DEL', ARGV[3] .. h)
    redis.call('SREM', KEYS[3], h)
  end
end
return 1
`)

// scriptRevokeInvitation deletes an account's invitation. KEYS:
// inv:HASH, invs:ACCOUNT. ARGV: account, hash.
var scriptRevokeInvitation = script(`
if redis.call('HGET', KEYS[1], 'account') ~= ARGV[1] then fail('NOTFOUND') end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return 1
`)

// Invite implements [store.Team].
func (s *Store) Invite(ctx context.Context, inv store.Invitation) error {
	if err := checkCtx(ctx, "invite"); err != nil {
		return err
	}
	if err := store.CheckRole(inv.Role); err != nil {
		return err
	}
	if len(inv.Hash) != 64 {
		return errors.New("redisstore: invite: the hash is not a SHA-256")
	}
	err := s.run(ctx, scriptInvite, []string{s.key("acct:" + inv.AccountID), s.key("inv:" + inv.Hash), s.key("invs:" + inv.AccountID)},
		inv.AccountID, inv.Email, string(inv.Role), strconv.FormatInt(inv.Expiry.UnixMilli(), 10),
		store.NormalizeEmail(inv.Email), s.key("inv:"), inv.Hash).Err()
	if c, _ := code(err); c == "NOTFOUND" {
		return store.ErrNotFound
	}
	return s.wrap(ctx, "invite", err)
}

// AcceptInvitation implements [store.Team]: the invitation is read to
// learn its account, then one script uses it up and adds the member.
func (s *Store) AcceptInvitation(ctx context.Context, hash, passwordHash string) (store.Member, error) {
	if err := checkCtx(ctx, "accept invitation"); err != nil {
		return store.Member{}, err
	}
	if len(hash) != 64 {
		return store.Member{}, store.ErrTokenInvalid
	}
	f, err := s.rdb.HMGet(ctx, s.key("inv:"+hash), "account", "email", "role").Result()
	if err != nil {
		return store.Member{}, s.wrap(ctx, "accept invitation", err)
	}
	account, _ := f[0].(string)
	email, _ := f[1].(string)
	role, _ := f[2].(string)
	if account == "" {
		return store.Member{}, store.ErrTokenInvalid
	}
	now := time.Now()
	rec := memberRecord{ID: uuid.NewString(), Email: email, Role: role, Password: passwordHash, Created: now.UnixMicro()}
	b, err := json.Marshal(rec)
	if err != nil {
		return store.Member{}, err
	}
	keys := []string{s.key("inv:" + hash), s.key("members"), s.key("team:" + account), s.key("acct:" + account)}
	err = s.run(ctx, scriptAccept, keys, account, strconv.FormatInt(now.UnixMilli(), 10),
		store.NormalizeEmail(email), rec.ID, string(b), store.MaxMembers).Err()
	switch c, _ := code(err); c {
	case "INVALID":
		return store.Member{}, store.ErrTokenInvalid
	case "EMAILTAKEN":
		return store.Member{}, store.ErrEmailTaken
	case "TEAMFULL":
		return store.Member{}, store.ErrTeamFull
	}
	if err != nil {
		return store.Member{}, s.wrap(ctx, "accept invitation", err)
	}
	return rec.member(account), nil
}

// Member implements [store.Team].
func (s *Store) Member(ctx context.Context, accountID, memberID string) (store.Member, error) {
	if err := checkCtx(ctx, "member"); err != nil {
		return store.Member{}, err
	}
	v, err := s.rdb.HGet(ctx, s.key("team:"+accountID), memberID).Result()
	if errors.Is(err, redis.Nil) {
		return store.Member{}, store.ErrNotFound
	}
	if err != nil {
		return store.Member{}, s.wrap(ctx, "member", err)
	}
	var rec memberRecord
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return store.Member{}, ErrBadData
	}
	return rec.member(accountID), nil
}

// MemberByEmail implements [store.Team].
func (s *Store) MemberByEmail(ctx context.Context, email string) (store.Member, error) {
	if err := checkCtx(ctx, "member by email"); err != nil {
		return store.Member{}, err
	}
	v, err := s.rdb.HGet(ctx, s.key("members"), store.NormalizeEmail(email)).Result()
	if errors.Is(err, redis.Nil) {
		return store.Member{}, store.ErrNotFound
	}
	if err != nil {
		return store.Member{}, s.wrap(ctx, "member by email", err)
	}
	account, id, ok := strings.Cut(v, " ")
	if !ok {
		return store.Member{}, ErrBadData
	}
	return s.Member(ctx, account, id)
}

// Members implements [store.Team].
func (s *Store) Members(ctx context.Context, accountID string) ([]store.Member, error) {
	if err := checkCtx(ctx, "members"); err != nil {
		return nil, err
	}
	all, err := s.rdb.HGetAll(ctx, s.key("team:"+accountID)).Result()
	if err != nil {
		return nil, s.wrap(ctx, "members", err)
	}
	out := make([]store.Member, 0, len(all))
	for _, v := range all {
		var rec memberRecord
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			return nil, ErrBadData
		}
		out = append(out, rec.member(accountID))
	}
	slices.SortFunc(out, func(a, b store.Member) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RemoveMember implements [store.Team].
func (s *Store) RemoveMember(ctx context.Context, accountID, memberID string) error {
	m, err := s.Member(ctx, accountID, memberID)
	if err != nil {
		return err
	}
	err = s.run(ctx, scriptRemoveMember, []string{s.key("team:" + accountID), s.key("members"), s.key("invs:" + accountID)},
		memberID, store.NormalizeEmail(m.Email), s.key("inv:")).Err()
	if c, _ := code(err); c == "NOTFOUND" {
		return store.ErrNotFound
	}
	return s.wrap(ctx, "remove member", err)
}

// Invitations implements [store.Team]: the account's index, then each
// invitation in one pipeline.
func (s *Store) Invitations(ctx context.Context, accountID string) ([]store.Invitation, error) {
	if err := checkCtx(ctx, "invitations"); err != nil {
		return nil, err
	}
	hashes, err := s.rdb.SMembers(ctx, s.key("invs:"+accountID)).Result()
	if err != nil {
		return nil, s.wrap(ctx, "invitations", err)
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(hashes))
	for i, h := range hashes {
		cmds[i] = pipe.HMGet(ctx, s.key("inv:"+h), "account", "email", "role", "exp")
	}
	if len(hashes) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, s.wrap(ctx, "invitations", err)
		}
	}
	now := time.Now()
	var out []store.Invitation
	for i, c := range cmds {
		inv, ok := invitationOf(hashes[i], c.Val())
		if ok && inv.AccountID == accountID && now.Before(inv.Expiry) {
			out = append(out, inv)
		}
	}
	slices.SortFunc(out, func(a, b store.Invitation) int {
		if c := a.Expiry.Compare(b.Expiry); c != 0 {
			return c
		}
		return strings.Compare(a.Hash, b.Hash)
	})
	return out, nil
}

// invitationOf reads an invitation's fields account, email, role, exp.
func invitationOf(hash string, f []any) (store.Invitation, bool) {
	if len(f) != 4 {
		return store.Invitation{}, false
	}
	account, _ := f[0].(string)
	email, _ := f[1].(string)
	role, _ := f[2].(string)
	exp, _ := f[3].(string)
	ms, err := strconv.ParseInt(exp, 10, 64)
	if account == "" || err != nil {
		return store.Invitation{}, false
	}
	return store.Invitation{Hash: hash, AccountID: account, Email: email, Role: store.Role(role), Expiry: time.UnixMilli(ms).UTC()}, true
}

// Invitation implements [store.Team].
func (s *Store) Invitation(ctx context.Context, hash string) (store.Invitation, error) {
	if err := checkCtx(ctx, "invitation"); err != nil {
		return store.Invitation{}, err
	}
	if len(hash) != 64 {
		return store.Invitation{}, store.ErrTokenInvalid
	}
	f, err := s.rdb.HMGet(ctx, s.key("inv:"+hash), "account", "email", "role", "exp").Result()
	if err != nil {
		return store.Invitation{}, s.wrap(ctx, "invitation", err)
	}
	inv, ok := invitationOf(hash, f)
	if !ok || !time.Now().Before(inv.Expiry) {
		return store.Invitation{}, store.ErrTokenInvalid
	}
	return inv, nil
}

// RevokeInvitation implements [store.Team].
func (s *Store) RevokeInvitation(ctx context.Context, accountID, hash string) error {
	if err := checkCtx(ctx, "revoke invitation"); err != nil {
		return err
	}
	err := s.run(ctx, scriptRevokeInvitation, []string{s.key("inv:" + hash), s.key("invs:" + accountID)}, accountID, hash).Err()
	if c, _ := code(err); c == "NOTFOUND" {
		return store.ErrNotFound
	}
	return s.wrap(ctx, "revoke invitation", err)
}

// auditRecord is an audit entry as the list keeps it.
type auditRecord struct {
	Time   int64  `json:"t"` // Unix microseconds
	Actor  string `json:"a"`
	Action string `json:"x"`
	Detail string `json:"d"`
}

// AddAudit implements [store.AuditLog]: LPUSH and LTRIM in one
// transaction.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	if err := checkCtx(ctx, "add audit"); err != nil {
		return err
	}
	e = store.CutAudit(e)
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b, err := json.Marshal(auditRecord{Time: e.Time.UnixMicro(), Actor: e.Actor, Action: e.Action, Detail: e.Detail})
	if err != nil {
		return err
	}
	k := s.acctKey(e.AccountID, "audit:"+e.AccountID)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, k, b)
		p.LTrim(ctx, k, 0, store.MaxAuditEntries-1)
		return nil
	})
	return s.wrap(ctx, "add audit", err)
}

// Audit implements [store.AuditLog].
func (s *Store) Audit(ctx context.Context, accountID string, offset, limit int) ([]store.AuditEntry, error) {
	if err := checkCtx(ctx, "audit"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	offset = max(offset, 0)
	vs, err := s.rdb.LRange(ctx, s.acctKey(accountID, "audit:"+accountID), int64(offset), int64(offset+limit-1)).Result()
	if err != nil {
		return nil, s.wrap(ctx, "audit", err)
	}
	out := make([]store.AuditEntry, 0, len(vs))
	for _, v := range vs {
		var r auditRecord
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, ErrBadData
		}
		out = append(out, store.AuditEntry{AccountID: accountID, Time: time.UnixMicro(r.Time).UTC(), Actor: r.Actor, Action: r.Action, Detail: r.Detail})
	}
	return out, nil
}
