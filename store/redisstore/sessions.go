package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
)

// Sessions is the dashboard's [store.SessionStore]: one string key per
// session, sess:ID (the hash of its token) under the store's prefix,
// expiring with the session, and a set acctsess:ACCOUNT of each account's
// session ids, so every process on the server shares them and a password
// change can end them.
type Sessions struct{ s *Store }

var _ store.SessionStore = (*Sessions)(nil)

// maxSessionSet is how many ids an account's set holds before a save
// drops the ids of ended sessions from it.
const maxSessionSet = 32

// scriptSaveSession writes a session and adds it to its account's set,
// whose expiry is kept at least the session's; a set grown past a bound
// loses the ids of ended sessions.
// KEYS: sess:ID, acctsess:ACCOUNT (or none). ARGV: data, ttl (ms), id,
// base, bound.
var scriptSaveSession = script(`
expect(KEYS[1], 'string')
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if KEYS[2] then
  expect(KEYS[2], 'set')
  redis.call('SADD', KEYS[2], ARGV[3])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
  if redis.call('SCARD', KEYS[2]) > tonumber(ARGV[5]) then
    for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
      if redis.call('EXISTS', ARGV[4] .. 'sess:' .. id) == 0 then redis.call('SREM', KEYS[2], id) end
    end
  end
end
return 1
`)

// scriptUpdateSession is scriptSaveSession for a session that still
// exists only. Same KEYS and ARGV.
var scriptUpdateSession = script(`
expect(KEYS[1], 'string')
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if KEYS[2] then
  expect(KEYS[2], 'set')
  redis.call('SADD', KEYS[2], ARGV[3])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
end
return 1
`)

// scriptDeleteAccountSessions deletes every session in an account's set
// but one. KEYS: acctsess:ACCOUNT. ARGV: base, the id to keep.
var scriptDeleteAccountSessions = script(`
expect(KEYS[1], 'set')
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if id ~= ARGV[2] then
    redis.call('DEL', ARGV[1] .. 'sess:' .. id)
    redis.call('SREM', KEYS[1], id)
  end
end
return 1
`)

// FindSession implements [store.SessionStore].
func (ss *Sessions) FindSession(ctx context.Context, id string) ([]byte, bool, error) {
	b, err := ss.s.rdb.Get(ctx, ss.s.key("sess:"+id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, ss.s.wrap(ctx, "find session", err)
	}
	return b, true, nil
}

// SaveSession implements [store.SessionStore].
func (ss *Sessions) SaveSession(ctx context.Context, s store.Session) error {
	return ss.save(ctx, scriptSaveSession, s)
}

// UpdateSession implements [store.SessionStore].
func (ss *Sessions) UpdateSession(ctx context.Context, s store.Session) error {
	return ss.save(ctx, scriptUpdateSession, s)
}

func (ss *Sessions) save(ctx context.Context, sc *redis.Script, s store.Session) error {
	ttl := time.Until(s.Expiry)
	if ttl <= 0 {
		return ss.DeleteSession(ctx, s.ID)
	}
	keys := []string{ss.s.key("sess:" + s.ID)}
	if s.AccountID != "" {
		keys = append(keys, ss.s.key("acctsess:"+s.AccountID))
	}
	ms := strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
	if err := ss.s.run(ctx, sc, keys, s.Data, ms, s.ID, ss.s.key(""), maxSessionSet).Err(); err != nil {
		return ss.s.wrap(ctx, "save session", err)
	}
	return nil
}

// DeleteSession implements [store.SessionStore]. The id stays in its
// account's set until the set is pruned or the account's sessions end.
func (ss *Sessions) DeleteSession(ctx context.Context, id string) error {
	if err := ss.s.rdb.Del(ctx, ss.s.key("sess:"+id)).Err(); err != nil {
		return ss.s.wrap(ctx, "delete session", err)
	}
	return nil
}

// DeleteAccountSessions implements [store.SessionStore]: one script
// over the account's set.
func (ss *Sessions) DeleteAccountSessions(ctx context.Context, accountID, keepID string) error {
	if accountID == "" {
		return nil
	}
	err := ss.s.run(ctx, scriptDeleteAccountSessions, []string{ss.s.key("acctsess:" + accountID)}, ss.s.key(""), keepID).Err()
	if err != nil {
		return ss.s.wrap(ctx, "delete account sessions", err)
	}
	return nil
}
