package redisstore

import "github.com/redis/go-redis/v9"

// Every script starts with this library. Scripts fail with error replies
// "VM_<CODE> [details]"; [code] reads them.
//
// Times are microseconds since the epoch by the server's clock, written as
// integer text (Lua's tostring would use an exponent).
const luaLib = `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function str(n) return string.format('%.0f', n) end

local function fail(c) error(redis.error_reply('VM_' .. c)) end

-- expect fails unless key k is missing or of type t. Scripts call it for
-- every key they will write before their first write.
local function expect(k, t)
  local got = redis.call('TYPE', k).ok
  if got ~= 'none' and got ~= t then fail('BADTYPE ' .. k .. ' is a ' .. got .. ', not a ' .. t) end
end

-- credit_keys returns the ledger keys of account a, for scripts that learn
-- the account only as they run.
local function credit_keys(base, a)
  return {bal = base .. 'bal:' .. a, hist = base .. 'hist:' .. a, idem = base .. 'idem:' .. a, seq = base .. 'seq:entry',
    tot = base .. 'ctot:' .. a}
end

-- credit_keys_at returns the ledger keys passed in KEYS[i] .. KEYS[i+4].
local function credit_keys_at(i)
  return {bal = KEYS[i], hist = KEYS[i + 1], idem = KEYS[i + 2], seq = KEYS[i + 3], tot = KEYS[i + 4]}
end

-- credit_total adds an entry just appended to the history, which is now n
-- long, to the account's per-day totals: in hash k.tot, fields
-- s:DAY:REASON (the sum of deltas) and n:DAY:REASON (the count), DAY
-- being days since the epoch; 'reasons' lists (JSON) the reasons seen, and
-- 'upto' how many entries of the history the totals hold. When 'upto'
-- lags (a history older than the totals, being backfilled), the entry is
-- left to the backfill, which counts the history in order.
local function credit_total(k, n, delta, reason, t)
  if tonumber(redis.call('HGET', k.tot, 'upto') or '0') ~= n - 1 then return end
  local f = str(math.floor(t / 86400000000)) .. ':' .. reason
  redis.call('HINCRBY', k.tot, 's:' .. f, delta)
  if redis.call('HINCRBY', k.tot, 'n:' .. f, 1) == 1 then
    local rs = cjson.decode(redis.call('HGET', k.tot, 'reasons') or '[]')
    local known = false
    for _, r in ipairs(rs) do if r == reason then known = true end end
    if not known then
      rs[#rs + 1] = reason
      redis.call('HSET', k.tot, 'reasons', cjson.encode(rs))
    end
  end
  redis.call('HSET', k.tot, 'upto', n)
end

-- credit_check decides a change without writing: it returns the stored
-- entry (JSON) when the idempotency key replays it, nil when the change may
-- be written, and fails on a conflict or a short balance.
local function credit_check(k, delta, reason, ikey)
  expect(k.bal, 'string'); expect(k.hist, 'list'); expect(k.idem, 'hash'); expect(k.seq, 'string')
  expect(k.tot, 'hash')
  if ikey ~= '' then
    local prev = redis.call('HGET', k.idem, ikey)
    if prev then
      local e = cjson.decode(prev)
      if e.delta ~= delta or e.reason ~= reason then fail('CONFLICT') end
      return prev
    end
  end
  local d = tonumber(delta)
  if d < 0 then
    local bal = tonumber(redis.call('GET', k.bal) or '0')
    if bal + d < 0 then fail('INSUFFICIENT ' .. str(bal)) end
  end
  return nil
end

-- credit_write appends an entry that credit_check accepted and returns it
-- (JSON).
local function credit_write(k, account, delta, reason, ref, ikey, t)
  local id = redis.call('INCR', k.seq)
  local e = cjson.encode({id = str(id), account = account, delta = delta, reason = reason, ref = ref, key = ikey, t = str(t)})
  redis.call('INCRBY', k.bal, delta)
  credit_total(k, redis.call('RPUSH', k.hist, e), delta, reason, t)
  if ikey ~= '' then redis.call('HSET', k.idem, ikey, e) end
  return e
end

-- The fair order between accounts (see Store.Lease). A shard's ready
-- jobs wait in their account's queue, rq:ACCOUNT, scored by id (or, for
-- a job retried after a failure or deferred, by its field q: behind the
-- account's jobs waiting then); accts holds the accounts whose queues
-- are not empty, scored by their next turn; turn holds the last turn
-- leased.

-- position returns the turn an account joining the rotation takes: the
-- later of the next turn of the account first in line and the last turn
-- leased, so that it never goes back.
local function position(base)
  local clock = tonumber(redis.call('GET', base .. 'turn') or '0')
  local head = redis.call('ZRANGE', base .. 'accts', 0, 0, 'WITHSCORES')
  if head[2] and tonumber(head[2]) > clock then return tonumber(head[2]) end
  return clock
end

-- activate puts account in the rotation, unless it is there already.
local function activate(base, account)
  local ka = base .. 'accts'
  if not redis.call('ZSCORE', ka, account) then redis.call('ZADD', ka, position(base), account) end
end

-- make_ready puts job id of account in its account's queue at its place
-- (q, or its id).
local function make_ready(base, id, account, q)
  redis.call('ZADD', base .. 'rq:' .. account, tonumber(q) or tonumber(id), id)
  activate(base, account)
end

-- enqueue_check returns the shard's sequence before the first new job,
-- failing if a key of a new job is taken. The shard's ids are off plus its
-- sequence.
local function enqueue_check(kseq, kready, jobbase, n, off)
  expect(kseq, 'string'); expect(kready, 'zset')
  local last = tonumber(redis.call('GET', kseq) or '0')
  local names = {}
  for i = 1, n do
    names[#names + 1] = jobbase .. str(off + last + i)
    if #names == 500 or i == n then
      if redis.call('EXISTS', unpack(names)) > 0 then fail('BADTYPE a new job key exists') end
      names = {}
    end
  end
  return last
end

-- enqueue_write creates jobs off+last+1 .. off+last+#emails, ready to
-- run, and their batch, named after its first job: bt:FIRST holds its
-- size, account, source and counters (done, and c:STATUS per status),
-- batches:ACCOUNT lists the account's batches; bno holds each account's
-- latest batch number.
local function enqueue_write(kseq, kready, jobbase, last, account, cost, emails, t, channel, source, off)
  local n = #emails
  redis.call('SET', kseq, str(last + n))
  local ts = str(t)
  local batch = str(off + last + 1)
  local base = string.sub(jobbase, 1, -5)
  redis.call('HSET', base .. 'bt:' .. batch, 'account', account, 'total', n, 'created', ts,
    'source', source, 'done', 0, 'no', redis.call('HINCRBY', base .. 'bno', account, 1))
  redis.call('ZADD', base .. 'batches:' .. account, off + last + 1, batch)
  local z = {}
  for i = 1, n do
    local id = str(off + last + i)
    redis.call('HSET', jobbase .. id, 'account', account, 'email', emails[i], 'cost', cost,
      'state', 'a', 'created', ts, 'batch', batch)
    if source ~= 'api' then redis.call('HSET', jobbase .. id, 'source', source) end
    z[#z + 1] = id
    z[#z + 1] = id
    if #z >= 1000 or i == n then
      redis.call('ZADD', kready, unpack(z))
      z = {}
    end
  end
  activate(base, account)
  redis.call('PUBLISH', channel, 'jobs')
end
`

func script(body string) *redis.Script { return redis.NewScript(luaLib + body) }

// scriptApply applies one ledger change.
// KEYS: the ledger keys ([Store.creditKeys]). ARGV: account, delta,
// reason, reference, idempotency key.
// Returns {replayed (0/1), entry JSON}.
var scriptApply = script(`
local k = credit_keys_at(1)
local prev = credit_check(k, ARGV[2], ARGV[3], ARGV[5])
if prev then return {1, prev} end
return {0, credit_write(k, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], now_us())}
`)

// scriptApplyGroup applies several changes of one account in order, each
// judged as scriptApply would judge it alone after the ones before it.
// KEYS: the ledger keys ([Store.creditKeys]). ARGV: account, then per
// change delta, reason, reference, idempotency key.
// Returns per change 'W' .. entry JSON (written), 'R' .. entry JSON (a
// replay), 'C' (a key used with another change) or 'I' .. balance (the
// balance does not cover it).
var scriptApplyGroup = script(`
local k = credit_keys_at(1)
expect(k.bal, 'string'); expect(k.hist, 'list'); expect(k.idem, 'hash'); expect(k.seq, 'string')
expect(k.tot, 'hash')
local t = now_us()
local out = {}
for i = 2, #ARGV, 4 do
  local delta, reason, ref, ikey = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local prev = ikey ~= '' and redis.call('HGET', k.idem, ikey)
  if prev then
    local e = cjson.decode(prev)
    if e.delta ~= delta or e.reason ~= reason then out[#out + 1] = 'C' else out[#out + 1] = 'R' .. prev end
  else
    local bal = tonumber(redis.call('GET', k.bal) or '0')
    if tonumber(delta) < 0 and bal + tonumber(delta) < 0 then
      out[#out + 1] = 'I' .. str(bal)
    else
      out[#out + 1] = 'W' .. credit_write(k, ARGV[1], delta, reason, ref, ikey, t)
    end
  end
end
return out
`)

// scriptCreateAccount creates an account (its signup grant is already
// written, in its shard, unless it is held back). KEYS: acct:ID, emails.
// ARGV: id, email, normalized email, plan, password hash ("" for none),
// the signup credits held back until the email is confirmed ("" for
// none).
// Returns the creation time.
var scriptCreateAccount = script(`
expect(KEYS[1], 'hash'); expect(KEYS[2], 'hash')
if redis.call('HEXISTS', KEYS[2], ARGV[3]) == 1 then fail('EMAILTAKEN') end
if redis.call('EXISTS', KEYS[1]) == 1 then fail('BADTYPE account id in use') end
local t = now_us()
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'email', ARGV[2], 'plan', ARGV[4], 'created', str(t))
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'pw', ARGV[5]) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'held', ARGV[6]) end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
return str(t)
`)

// scriptSetPassword replaces (or, with "", removes) an account's password
// hash. KEYS: acct:ID. ARGV: hash.
var scriptSetPassword = script(`
expect(KEYS[1], 'hash')
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'pw') else redis.call('HSET', KEYS[1], 'pw', ARGV[1]) end
return 1
`)

// scriptCreateKey stores an API key.
// KEYS: acct:ACCOUNT, key:ID, keyhash, keys:ACCOUNT. ARGV: key id, account,
// name, display prefix, hash, permissions (comma-separated), the most
// active keys ("0" for no bound), the name of a key's hash without its id.
// Returns the creation time; fails with KEYLIMIT when the account's
// unrevoked keys reach the bound.
var scriptCreateKey = script(`
expect(KEYS[2], 'hash'); expect(KEYS[3], 'hash'); expect(KEYS[4], 'list')
if redis.call('EXISTS', KEYS[1]) == 0 then fail('NOTFOUND') end
if redis.call('HEXISTS', KEYS[3], ARGV[5]) == 1 then fail('KEYEXISTS') end
if redis.call('EXISTS', KEYS[2]) == 1 then fail('BADTYPE key id in use') end
local max = tonumber(ARGV[7])
if max > 0 then
  local active = 0
  for _, id in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do
    local f = redis.call('HMGET', ARGV[8] .. id, 'id', 'revoked')
    if f[1] and (not f[2] or f[2] == '') then active = active + 1 end
  end
  if active >= max then fail('KEYLIMIT') end
end
local t = str(now_us())
redis.call('HSET', KEYS[2], 'id', ARGV[1], 'account', ARGV[2], 'name', ARGV[3], 'prefix', ARGV[4],
  'hash', ARGV[5], 'perms', ARGV[6], 'created', t)
redis.call('HSET', KEYS[3], ARGV[5], ARGV[1])
redis.call('RPUSH', KEYS[4], ARGV[1])
return t
`)

// scriptRevokeKey revokes a key, keeping the first revocation time.
// KEYS: key:ID. ARGV: account.
var scriptRevokeKey = script(`
local a = redis.call('HGET', KEYS[1], 'account')
if not a or a ~= ARGV[1] then fail('NOTFOUND') end
redis.call('HSETNX', KEYS[1], 'revoked', str(now_us()))
return 1
`)

// scriptAuthenticate finds a key by hash and records its use at most once a
// minute. When no key has the hash, it checks that the marker still holds
// the value the store read at setup: a server that lost its data fails
// with LOST rather than refusing every key.
// KEYS: keyhash, marker. ARGV: base, hash, marker value. Returns the key's
// hash fields, or nil when no valid key has the hash.
var scriptAuthenticate = script(`
local function missing()
  if ARGV[3] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[3] then fail('LOST') end
  return false
end
local id = redis.call('HGET', KEYS[1], ARGV[2])
if not id then return missing() end
local kk = ARGV[1] .. 'key:' .. id
local f = redis.call('HGETALL', kk)
if #f == 0 then return missing() end
local m = {}
for i = 1, #f, 2 do m[f[i]] = f[i + 1] end
if m.revoked and m.revoked ~= '' then return false end
local t = now_us()
if not m.used or t - tonumber(m.used) >= 60000000 then
  redis.call('HSET', kk, 'used', str(t))
  f[#f + 1] = 'used'
  f[#f + 1] = str(t)
end
return f
`)

// scriptEnqueue creates a batch of jobs.
// KEYS: seq:job, rq:ACCOUNT (of the account's shard). ARGV: job key base,
// account, cost, channel, source, id offset of the shard, emails...
// Returns the first id.
var scriptEnqueue = script(`
local emails = {}
for i = 7, #ARGV do emails[#emails + 1] = ARGV[i] end
local off = tonumber(ARGV[6])
local last = enqueue_check(KEYS[1], KEYS[2], ARGV[1], #emails, off)
enqueue_write(KEYS[1], KEYS[2], ARGV[1], last, ARGV[2], ARGV[3], emails, now_us(), ARGV[4], ARGV[5], off)
return str(off + last + 1)
`)

// scriptEnqueueCharged charges one credit per job and creates the jobs.
// KEYS: seq:job, rq:ACCOUNT, idk:ACCOUNT:KEY (the batch's idempotency record),
// the ledger keys of the account, all in its shard. ARGV: the shard's
// base, account, channel, idempotency key, fingerprint, TTL of the record
// (ms), source, id offset of the shard, emails...
// The record is "FIRST:COUNT:FINGERPRINT" and expires after the TTL; the
// charge's ledger entry carries no idempotency key, so an expired key can
// start a new batch. Returns the first id, or fails with INSUFFICIENT or
// CONFLICT (the key named a batch of another size or fingerprint).
var scriptEnqueueCharged = script(`
local base, account, ikey, fp, source = ARGV[1], ARGV[2], ARGV[4], ARGV[5], ARGV[7]
local off = tonumber(ARGV[8])
local emails = {}
for i = 9, #ARGV do emails[#emails + 1] = ARGV[i] end
local n = #emails
if ikey ~= '' then
  expect(KEYS[3], 'string')
  local prev = redis.call('GET', KEYS[3])
  if prev then
    local first, count, pfp = string.match(prev, '^(%d+):(%d+):(.*)$')
    if not first then fail('BADTYPE batch entry') end
    if tonumber(count) ~= n or pfp ~= fp then fail('CONFLICT') end
    return first
  end
end
local k = credit_keys_at(4)
credit_check(k, str(-n), 'charge', '')
local jobbase = base .. 'job:'
local last = enqueue_check(KEYS[1], KEYS[2], jobbase, n, off)
local t = now_us()
enqueue_write(KEYS[1], KEYS[2], jobbase, last, account, '1', emails, t, ARGV[3], source, off)
local first = str(off + last + 1)
local ref = ikey
if ref == '' then ref = 'jobs:' .. first .. '-' .. str(off + last + n) end
credit_write(k, account, str(-n), 'charge', ref, '', t)
if ikey ~= '' then redis.call('SET', KEYS[3], first .. ':' .. str(n) .. ':' .. fp, 'PX', ARGV[6]) end
return first
`)

// scriptLease leases up to max due jobs in the fair order: due retries
// and jobs of the layout before it (the shard's ready set) go to their
// accounts' queues, then each of the first accounts in line is given jobs
// from its queue, one turn each, the account with the lowest next turn
// first, until max.
// KEYS: delayed, leases, accts, turn, ready (the older layout's). ARGV:
// shard base, max, duration (µs), token base. Returns, per job, {id,
// account, email, cost, errors, last_error, created, token, expires,
// batch, source, unjudged}, in turn order.
var scriptLease = script(`
expect(KEYS[1], 'zset'); expect(KEYS[2], 'zset'); expect(KEYS[3], 'zset'); expect(KEYS[5], 'zset')
local base = ARGV[1]
local jobbase = base .. 'job:'
local max = tonumber(ARGV[2])
local now = now_us()
for _, k in ipairs({1, 5}) do
  local ids
  if k == 1 then
    ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
  else
    ids = redis.call('ZRANGE', KEYS[5], 0, 999)
  end
  for _, id in ipairs(ids) do
    local f = redis.call('HMGET', jobbase .. id, 'state', 'account', 'q')
    if f[1] == 'a' and f[2] then
      local q = f[3]
      if k == 1 then
        -- A job given back for later takes its place behind its
        -- account's jobs waiting now.
        local last = redis.call('ZRANGE', base .. 'rq:' .. f[2], -1, -1, 'WITHSCORES')
        q = str(math.max(tonumber(last[2] or '0'), tonumber(q or id)) + 1)
        redis.call('HSET', jobbase .. id, 'q', q)
      end
      make_ready(base, id, f[2], q)
    end
  end
  if #ids > 0 then redis.call('ZREM', KEYS[k], unpack(ids)) end
end
-- Water-filling over the first accounts in line: each job goes to the
-- account whose next turn is lowest.
local heads = redis.call('ZRANGE', KEYS[3], 0, math.min(max, 64) - 1, 'WITHSCORES')
local acct, score, size, take = {}, {}, {}, {}
for i = 1, #heads, 2 do
  local n = redis.call('ZCARD', base .. 'rq:' .. heads[i])
  if n == 0 then
    redis.call('ZREM', KEYS[3], heads[i])
  else
    acct[#acct + 1] = heads[i]; score[#score + 1] = tonumber(heads[i + 1]); size[#size + 1] = n; take[#take + 1] = 0
  end
end
if #acct == 1 then
  take[1] = math.min(max, size[1])
else
  for _ = 1, max do
    local best
    for i = 1, #acct do
      if take[i] < size[i] and (not best or score[i] + take[i] < score[best] + take[best]) then best = i end
    end
    if not best then break end
    take[best] = take[best] + 1
  end
end
local chosen = {}
local clock = tonumber(redis.call('GET', KEYS[4]) or '0')
for i = 1, #acct do
  if take[i] > 0 then
    local rq = base .. 'rq:' .. acct[i]
    local ids = redis.call('ZRANGE', rq, 0, take[i] - 1)
    for j, id in ipairs(ids) do chosen[#chosen + 1] = {score[i] + j - 1, tonumber(id), id} end
    redis.call('ZREM', rq, unpack(ids))
    local next = score[i] + take[i]
    if take[i] >= size[i] then redis.call('ZREM', KEYS[3], acct[i]) else redis.call('ZADD', KEYS[3], next, acct[i]) end
    if next - 1 > clock then clock = next - 1 end
  end
end
if #chosen > 0 then redis.call('SET', KEYS[4], str(clock)) end
table.sort(chosen, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
local exp = now + tonumber(ARGV[3])
local out, leased = {}, {}
for i, c in ipairs(chosen) do
  local id = c[3]
  local key = jobbase .. id
  local f = redis.call('HMGET', key, 'state', 'account', 'email', 'cost', 'errors', 'last_error', 'created', 'batch', 'source', 'unjudged')
  if f[1] == 'a' then
    local tok = ARGV[4] .. '.' .. i
    redis.call('HSET', key, 'state', 'r', 'token', tok, 'expires', str(exp))
    leased[#leased + 1] = exp
    leased[#leased + 1] = id
    -- A job the releases before the unjudged field retried carries the
    -- count at the end of its last error only.
    local unjudged = f[10] or (f[6] and string.match(f[6], ' %(unjudged attempt (%d+) of %d+%)$')) or '0'
    for _, v in ipairs({id, f[2] or '', f[3] or '', f[4] or '0', f[5] or '0', f[6] or '', f[7] or '', tok, str(exp), f[8] or '', f[9] or '', unjudged}) do out[#out + 1] = v end
  end
end
if #leased > 0 then redis.call('ZADD', KEYS[2], unpack(leased)) end
return out
`)

// scriptHeartbeat extends a lease.
// KEYS: job:ID, leases. ARGV: id, token, duration (µs). Returns the new
// expiry.
var scriptHeartbeat = script(`
expect(KEYS[2], 'zset')
local f = redis.call('HMGET', KEYS[1], 'state', 'token')
if not f[1] then fail('NOTFOUND') end
if f[1] ~= 'r' or f[2] ~= ARGV[2] or ARGV[2] == '' then fail('LEASELOST') end
local exp = now_us() + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'expires', str(exp))
redis.call('ZADD', KEYS[2], exp, ARGV[1])
return str(exp)
`)

// luaCompleteLib holds complete_one, the completion of one job, shared
// by the scripts that complete one job and many, and the group's writes
// those completions share.
//
// complete_one(base, id, token, result, refund, retention, status, ev,
// bev, t, acc) completes job id: ev is the job's event {id, type,
// created, payload} or nil, bev the batch's {id, type, created} or nil
// (see scriptComplete), t the completion time in µs (nil: the server's
// time now), acc the group's pending writes (new_group). It makes every
// check before its first write and returns nil, or the code of the check
// that failed (NOTFOUND, LEASELOST, DUPLICATE) having written nothing.
// Wrong key types and a refund that conflicts with the ledger fail the
// whole script. What the jobs of a group share waits in acc until
// flush_group: the leases dropped and done entries added (one ZREM and
// one ZADD for the group) and each batch's counters (read once, one
// HINCRBY per batch and status); a batch's last completion writes its
// counters at once, as its event holds the final counts.
const luaCompleteLib = `
local function new_group(base)
  return {leases = base .. 'leases', done = base .. 'done', ids = {}, at = {}, batches = {}, order = {}}
end

local function flush_batch(b)
  if b.n > 0 then
    redis.call('HINCRBY', b.key, 'done', b.n)
    for st, n in pairs(b.counts) do redis.call('HINCRBY', b.key, 'c:' .. st, n) end
    b.n, b.counts = 0, {}
  end
end

local function flush_group(g)
  for i = 1, #g.ids, 500 do
    local ids, at = {}, {}
    for j = i, math.min(i + 499, #g.ids) do
      ids[#ids + 1] = g.ids[j]
      at[#at + 1] = g.at[j]
      at[#at + 1] = g.ids[j]
    end
    redis.call('ZREM', g.leases, unpack(ids))
    redis.call('ZADD', g.done, unpack(at))
  end
  g.ids, g.at = {}, {}
  for _, b in ipairs(g.order) do flush_batch(b) end
end

local function complete_one(base, id, token, result, refund, retention, status, ev, bev, t, g)
  local jk = base .. 'job:' .. id
  local f = redis.call('HMGET', jk, 'state', 'token', 'account', 'batch')
  if not f[1] then return 'NOTFOUND' end
  if f[1] ~= 'r' or f[2] ~= token or token == '' then return 'LEASELOST' end
  local account = f[3]
  local k, replay
  if refund ~= '0' then
    k = credit_keys(base, account)
    replay = credit_check(k, refund, 'refund', 'refund:job:' .. id)
  end
  if ev then
    if redis.call('EXISTS', base .. 'wh:ev:' .. ev[1]) == 1 then return 'DUPLICATE' end
    dcheck(base, ev[1], account)
  end
  -- The batch's counters, read once a group: is this its last
  -- completion?
  local b, last
  if f[4] then
    local bkey = base .. 'bt:' .. f[4]
    b = g.batches[bkey]
    if b == nil then
      -- Not a hash: HMGET fails the script here, before this job's
      -- first write.
      local h = redis.call('HMGET', bkey, 'total', 'done')
      b = false
      if h[1] then
        b = {key = bkey, total = tonumber(h[1]), seen = tonumber(h[2] or '0'), n = 0, counts = {}}
        g.order[#g.order + 1] = b
      end
      g.batches[bkey] = b
    end
    if b then
      last = b.seen + 1 == b.total
      if last and bev then
        if redis.call('EXISTS', base .. 'wh:ev:' .. bev[1]) == 1 then return 'DUPLICATE' end
        dcheck(base, bev[1], account)
      end
    end
  end
  -- writes
  t = t or now_us()
  redis.call('HSET', jk, 'state', 'd', 'token', '', 'expires', '', 'result', result, 'completed', str(t))
  redis.call('PEXPIRE', jk, retention)
  g.ids[#g.ids + 1] = id
  g.at[#g.at + 1] = t
  if refund ~= '0' and not replay then
    credit_write(k, account, refund, 'refund', 'job:' .. id, 'refund:job:' .. id, t)
  end
  if ev then
    local created = ev[3]
    if created == '' then created = str(t) end
    dadd(base, ev[1], account, ev[2], id, created, ev[4], '')
  end
  if b then
    b.seen, b.n = b.seen + 1, b.n + 1
    b.counts[status] = (b.counts[status] or 0) + 1
    if last then
      flush_batch(b)
      -- The batch's record lives as long as its last completed job.
      redis.call('PEXPIRE', b.key, retention)
      redis.call('HSET', b.key, 'completed', str(t))
      if bev then
        -- The event holds the batch's final counts as data in its
        -- batch field (webhook.Event.Batch); reading it back makes its
        -- bytes.
        local h = redis.call('HGETALL', b.key)
        local counts, total = {}, 0
        for i = 1, #h, 2 do
          if string.sub(h[i], 1, 2) == 'c:' then
            counts[string.sub(h[i], 3)] = tonumber(h[i + 1])
          elseif h[i] == 'total' then
            total = tonumber(h[i + 1])
          end
        end
        -- The payload holds the same data after a zero byte, as the
        -- releases before the batch field wrote and read it, so that
        -- their instances deliver it alike during a rolling upgrade.
        local data = cjson.encode({batch_id = f[4], total = total, counts = counts})
        dadd(base, bev[1], account, bev[2], id, bev[3], '\0' .. data, data)
      end
    end
  end
  return nil
end
`

// completeWidth is the number of ARGV fields per job of the completion
// scripts: id, token, result, refund, status; the job's event (id, type,
// created in µs or "" for the completion time, payload; an empty id for
// none); the batch's event (id, type, created in µs; an empty id for
// none).
const completeWidth = 12

// scriptComplete completes a leased job, counts it in its batch, refunds
// and writes its events as pending webhook deliveries; the batch's event
// only if this completion is the batch's last, holding the batch's final
// counts in its batch field (see webhook.Event.Batch).
// KEYS: job:ID, leases, done. ARGV: base, retention (ms), then one job's
// completeWidth fields. Fails with NOTFOUND, LEASELOST or DUPLICATE.
var scriptComplete = script(luaWebhookLib + luaCompleteLib + `
expect(KEYS[2], 'zset'); expect(KEYS[3], 'zset')
local a = ARGV
local ev, bev
if a[8] ~= '' then ev = {a[8], a[9], a[10], a[11]} end
if a[12] ~= '' then bev = {a[12], a[13], a[14]} end
local g = new_group(a[1])
local code = complete_one(a[1], a[3], a[4], a[5], a[6], a[2], a[7], ev, bev, nil, g)
if code then fail(code) end
flush_group(g)
return 1
`)

// scriptCompleteMany completes several leased jobs, each as
// scriptComplete does and independently of the others.
// KEYS: leases, done. ARGV: base, retention (ms), then completeWidth
// fields per job. Returns, per job, "" or the code of its failure.
var scriptCompleteMany = script(luaWebhookLib + luaCompleteLib + `
expect(KEYS[1], 'zset'); expect(KEYS[2], 'zset')
local out = {}
local t = now_us()
local g = new_group(ARGV[1])
for i = 3, #ARGV, 12 do
  local a = {}
  for j = 0, 11 do a[j + 1] = ARGV[i + j] end
  local ev, bev
  if a[6] ~= '' then ev = {a[6], a[7], a[8], a[9]} end
  if a[10] ~= '' then bev = {a[10], a[11], a[12]} end
  -- A failure of the whole script still leaves the jobs before it
  -- completed in full, their shared writes included.
  local ok, code = pcall(complete_one, ARGV[1], a[1], a[2], a[3], a[4], ARGV[2], a[5], ev, bev, t, g)
  if not ok then
    flush_group(g)
    error(code)
  end
  out[#out + 1] = code or ''
end
flush_group(g)
return out
`)

// scriptRetry gives a leased job back. A failed attempt costs the
// account a turn: the job takes a place behind the account's jobs waiting
// now (q); one deferred takes it when it comes due (scriptLease). One
// handed back at once without an error keeps its place.
// KEYS: job:ID, leases, delayed, accts. ARGV: id, token, run-at (µs, 0 for
// now), error, channel, shard base, unjudged attempts (with an error).
var scriptRetry = script(`
expect(KEYS[2], 'zset'); expect(KEYS[3], 'zset'); expect(KEYS[4], 'zset')
local id, base = ARGV[1], ARGV[6]
local f = redis.call('HMGET', KEYS[1], 'state', 'token', 'account', 'q')
if not f[1] then fail('NOTFOUND') end
if f[1] ~= 'r' or f[2] ~= ARGV[2] or ARGV[2] == '' then fail('LEASELOST') end
local at = tonumber(ARGV[3])
-- Any run-at asks for later, also one the caller's clock, behind the
-- server's, put in the past: the job takes its place when it comes due.
local later = at > 0
local q = f[4]
if ARGV[4] ~= '' and not later then
  local last = redis.call('ZRANGE', base .. 'rq:' .. f[3], -1, -1, 'WITHSCORES')
  q = str(math.max(tonumber(last[2] or '0'), tonumber(q or id)) + 1)
  redis.call('HSET', KEYS[1], 'q', q)
end
if ARGV[4] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'errors', 1)
  redis.call('HSET', KEYS[1], 'last_error', ARGV[4], 'unjudged', ARGV[7])
end
redis.call('HSET', KEYS[1], 'state', 'a', 'token', '', 'expires', '')
redis.call('ZREM', KEYS[2], id)
if later then
  redis.call('ZADD', KEYS[3], at, id)
else
  make_ready(base, id, f[3], q)
  redis.call('PUBLISH', ARGV[5], 'jobs')
end
return 1
`)

// scriptDeferMany hands leased jobs of one shard back for later, each
// taking its place when it comes due (scriptLease), as scriptRetry does
// for a job with a run-at and no error.
// KEYS: leases, delayed. ARGV: shard base, then per job id, token, run-at
// (µs). Returns per job an empty string (deferred), 'NOTFOUND' or
// 'LEASELOST'.
var scriptDeferMany = script(`
expect(KEYS[1], 'zset'); expect(KEYS[2], 'zset')
local base = ARGV[1]
local out, gone, later = {}, {}, {}
for i = 2, #ARGV, 3 do
  local id, tok, at = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local jk = base .. 'job:' .. id
  local f = redis.call('HMGET', jk, 'state', 'token')
  if not f[1] then
    out[#out + 1] = 'NOTFOUND'
  elseif f[1] ~= 'r' or f[2] ~= tok or tok == '' then
    out[#out + 1] = 'LEASELOST'
  else
    redis.call('HSET', jk, 'state', 'a', 'token', '', 'expires', '')
    gone[#gone + 1] = id
    later[#later + 1] = at
    later[#later + 1] = id
    out[#out + 1] = ''
  end
end
if #gone > 0 then
  redis.call('ZREM', KEYS[1], unpack(gone))
  redis.call('ZADD', KEYS[2], unpack(later))
end
return out
`)

// scriptRescue makes jobs with expired leases available again, in their
// places in their accounts' queues.
// KEYS: leases, accts. ARGV: job key base, limit (-1 for all), channel.
// Returns how many it rescued.
var scriptRescue = script(`
expect(KEYS[1], 'zset'); expect(KEYS[2], 'zset')
local now = now_us()
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. str(now), 'LIMIT', 0, tonumber(ARGV[2]))
local fields = {}
for i, id in ipairs(ids) do
  fields[i] = redis.call('HMGET', ARGV[1] .. id, 'state', 'expires', 'account', 'q')
end
local base = string.sub(ARGV[1], 1, -5)
-- writes
local n = 0
for i, id in ipairs(ids) do
  local f = fields[i]
  if f[1] == 'r' and f[2] and f[2] ~= '' and tonumber(f[2]) < now then
    local key = ARGV[1] .. id
    redis.call('HINCRBY', key, 'errors', 1)
    redis.call('HSET', key, 'last_error', 'lease expired', 'unjudged', '0', 'state', 'a', 'token', '', 'expires', '')
    redis.call('ZREM', KEYS[1], id)
    make_ready(base, id, f[3], f[4])
    n = n + 1
  elseif f[1] ~= 'r' then
    redis.call('ZREM', KEYS[1], id)
  end
end
if n > 0 then redis.call('PUBLISH', ARGV[3], 'jobs') end
return n
`)

// scriptCleanup removes jobs completed before a time, and the batches
// whose last job completed before it.
// KEYS: done. ARGV: job key base, before (µs), limit (-1 for all).
// Returns how many jobs it removed.
var scriptCleanup = script(`
expect(KEYS[1], 'zset')
local base = string.sub(ARGV[1], 1, -5)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local states, batches = {}, {}
for i, id in ipairs(ids) do
  local f = redis.call('HMGET', ARGV[1] .. id, 'state', 'batch')
  states[i] = f[1]
  if f[2] then batches[f[2]] = true end
end
local gone = {}
for b in pairs(batches) do
  local f = redis.call('HMGET', base .. 'bt:' .. b, 'completed', 'account')
  if f[1] and f[1] ~= '' and tonumber(f[1]) < tonumber(ARGV[2]) then
    if f[2] then expect(base .. 'batches:' .. f[2], 'zset') end
    gone[#gone + 1] = {b, f[2]}
  end
end
-- writes
for i, id in ipairs(ids) do
  if states[i] == 'd' then redis.call('DEL', ARGV[1] .. id) end
  redis.call('ZREM', KEYS[1], id)
end
for _, g in ipairs(gone) do
  redis.call('DEL', base .. 'bt:' .. g[1])
  if g[2] then redis.call('ZREM', base .. 'batches:' .. g[2], g[1]) end
end
return #ids
`)
