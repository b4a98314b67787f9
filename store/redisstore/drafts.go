package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.ListDraftDriver = (*jobsDriver)(nil)

// List drafts live in the store's own slot ("{prefix}"), as accounts and
// sessions do: draft:ID, a hash of the record, and draftdata:ID, a hash
// of the body's chunks by number, each expiring with the draft;
// draftacct:ACCOUNT, the id of the account's draft; draftnet:NETWORK, a
// sorted set of the network's drafts by arrival (draftseq numbers them).

// scriptPutDraft stores a draft, dropping the account's other draft and
// the network's oldest beyond the bound.
// KEYS: draft:ID, draftacct:ACCOUNT, draftseq, draftnet:NETWORK (or none).
// ARGV: id, account, network, meta, chunks, expires (Unix ms), per
// network bound (0: none), restore ("1"), base, now (Unix ms).
var scriptPutDraft = script(`
expect(KEYS[1], 'hash'); expect(KEYS[2], 'string'); expect(KEYS[3], 'string')
local id, base = ARGV[1], ARGV[9]
local function drop(d)
  local acct = redis.call('HGET', base .. 'draft:' .. d, 'account')
  redis.call('DEL', base .. 'draft:' .. d, base .. 'draftdata:' .. d)
  if acct and redis.call('GET', base .. 'draftacct:' .. acct) == d then redis.call('DEL', base .. 'draftacct:' .. acct) end
end
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= id and redis.call('EXISTS', base .. 'draft:' .. cur) == 1 then
  if ARGV[8] == '1' then return 0 end
  drop(cur)
end
local bound = tonumber(ARGV[7])
if KEYS[4] then
  expect(KEYS[4], 'zset')
  for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    if m == id or redis.call('EXISTS', base .. 'draft:' .. m) == 0 then redis.call('ZREM', KEYS[4], m) end
  end
  if bound > 0 then
    while redis.call('ZCARD', KEYS[4]) >= bound do
      local o = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
      drop(o)
      redis.call('ZREM', KEYS[4], o)
    end
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'account', ARGV[2], 'network', ARGV[3], 'meta', ARGV[4], 'chunks', ARGV[5], 'expires', ARGV[6])
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
redis.call('SET', KEYS[2], id)
redis.call('PEXPIREAT', KEYS[2], ARGV[6])
if KEYS[4] then
  local seq = redis.call('INCR', KEYS[3])
  redis.call('ZADD', KEYS[4], seq, id)
  local left = tonumber(ARGV[6]) - tonumber(ARGV[10])
  if left > 0 and redis.call('PTTL', KEYS[4]) < left then redis.call('PEXPIRE', KEYS[4], left) end
end
return 1
`)

// scriptTakeDraft removes the account's draft and returns its record.
// KEYS: draft:ID. ARGV: account.
var scriptTakeDraft = script(`
expect(KEYS[1], 'hash')
if redis.call('HGET', KEYS[1], 'account') ~= ARGV[1] then return false end
local f = redis.call('HMGET', KEYS[1], 'network', 'meta', 'chunks', 'expires')
redis.call('DEL', KEYS[1])
return f
`)

// PutListDraftChunk implements [jobsdriver.ListDraftDriver]: a field of
// draftdata:ID, which expires with the draft.
func (s *jobsDriver) PutListDraftChunk(ctx context.Context, id string, n int, data []byte, expiresAt time.Time) error {
	k := s.key("draftdata:" + id)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, strconv.Itoa(n), data)
		p.PExpireAt(ctx, k, expiresAt)
		return nil
	})
	return s.wrap(ctx, "put list draft chunk", err)
}

// PutListDraft implements [jobsdriver.ListDraftDriver]: one script.
func (s *jobsDriver) PutListDraft(ctx context.Context, p jobtype.PutListDraftParams) (bool, error) {
	d := p.Draft
	keys := []string{s.key("draft:" + d.ID), s.key("draftacct:" + d.AccountID), s.key("draftseq")}
	if d.Network != "" {
		keys = append(keys, s.key("draftnet:"+d.Network))
	}
	restore := "0"
	if p.Restore {
		restore = "1"
	}
	exp := max(d.ExpiresAt.UnixMilli(), 1)
	n, err := s.run(ctx, scriptPutDraft, keys, d.ID, d.AccountID, d.Network, d.Meta, d.Chunks, exp, max(p.PerNetwork, 0), restore, s.key(""), time.Now().UnixMilli()).Int()
	if err != nil {
		return false, s.wrap(ctx, "put list draft", err)
	}
	return n == 1, nil
}

// ListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) ListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error) {
	f, err := s.rdb.HMGet(ctx, s.key("draft:"+id), "account", "network", "meta", "chunks", "expires").Result()
	if err != nil {
		return jobtype.ListDraft{}, s.wrap(ctx, "list draft", err)
	}
	if a, _ := f[0].(string); a != accountID {
		return jobtype.ListDraft{}, jobtype.ErrNotFound
	}
	return draftOf(id, accountID, f[1:])
}

// draftOf reads a draft's record from its network, meta, chunks and
// expires fields.
func draftOf(id, account string, f []any) (jobtype.ListDraft, error) {
	net, _ := f[0].(string)
	meta, _ := f[1].(string)
	cs, _ := f[2].(string)
	es, _ := f[3].(string)
	chunks, err1 := strconv.Atoi(cs)
	exp, err2 := strconv.ParseInt(es, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return jobtype.ListDraft{}, errors.Join(ErrBadData, err)
	}
	return jobtype.ListDraft{ID: id, AccountID: account, Network: net, Meta: []byte(meta), Chunks: chunks, ExpiresAt: time.UnixMilli(exp)}, nil
}

// ListDraftChunk implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error) {
	b, err := s.rdb.HGet(ctx, s.key("draftdata:"+id), strconv.Itoa(n)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, jobtype.ErrNotFound
	}
	if err != nil {
		return nil, s.wrap(ctx, "list draft chunk", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// TakeListDraft implements [jobsdriver.ListDraftDriver]: one script.
func (s *jobsDriver) TakeListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error) {
	f, err := s.run(ctx, scriptTakeDraft, []string{s.key("draft:" + id)}, accountID).Slice()
	if errors.Is(err, redis.Nil) {
		return jobtype.ListDraft{}, jobtype.ErrNotFound
	}
	if err != nil {
		return jobtype.ListDraft{}, s.wrap(ctx, "take list draft", err)
	}
	if len(f) != 4 {
		return jobtype.ListDraft{}, ErrBadData
	}
	return draftOf(id, accountID, f)
}

// DeleteListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) DeleteListDraft(ctx context.Context, id string) error {
	err := s.rdb.Del(ctx, s.key("draft:"+id), s.key("draftdata:"+id)).Err()
	return s.wrap(ctx, "delete list draft", err)
}
