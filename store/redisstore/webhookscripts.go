package redisstore

// Webhook outbox and endpoint scripts. Unlike the job scripts they never
// read the server's clock: every time comes from the caller, in
// microseconds since the epoch, so dispatchers and tests decide what
// "now" is.
//
// A delivery is the hash wh:ev:ID with the fields account, type, job,
// created, payload, state (p pending, d delivered, x dead), next (due
// time), token and expires (the lease), attempts (a JSON array written by
// Go), finished, reason and, for a batch.completed event whose data its
// batch's last completion wrote, batch (the data as JSON,
// webhook.Event.Batch; earlier releases wrote it as the payload, a zero
// byte then JSON, and such hashes are read as they lie). A pending delivery is in wh:due, scored by
// the time it may next be leased: its due time, or, while leased, its
// lease expiry. So Lease reads exactly the eligible deliveries from the
// front of wh:due, and wh:due's size is the number of pending deliveries.

// luaWebhookLib holds the helpers of the webhook scripts.
const luaWebhookLib = `
-- dfields are the delivery fields the scripts return, in this order.
local dfields = {'account', 'type', 'job', 'created', 'payload', 'state', 'next', 'attempts', 'finished', 'reason', 'batch'}

-- dread returns a delivery's fields (missing ones as ''), or nil when
-- the hash does not exist.
local function dread(k)
  local f = redis.call('HMGET', k, unpack(dfields))
  if not f[6] then return nil end
  for i = 1, #dfields do if not f[i] then f[i] = '' end end
  return f
end

-- dadd writes a new pending delivery and indexes it; batch is the
-- event's batch data as JSON, or '' for none. The caller has checked
-- that wh:ev:ID does not exist.
local function dadd(base, id, account, typ, job, created, payload, batch)
  local k = base .. 'wh:ev:' .. id
  redis.call('HSET', k, 'account', account, 'type', typ, 'job', job,
    'created', created, 'payload', payload, 'state', 'p', 'next', created)
  if batch ~= '' then redis.call('HSET', k, 'batch', batch) end
  local score = tonumber(created) or 0
  redis.call('ZADD', base .. 'wh:due', score, id)
  redis.call('ZADD', base .. 'wh:acct:' .. account, score, id)
end

-- dcheck fails unless a new delivery with this id may be written.
local function dcheck(base, id, account)
  local k = base .. 'wh:ev:' .. id
  expect(k, 'hash'); expect(base .. 'wh:due', 'zset'); expect(base .. 'wh:acct:' .. account, 'zset')
  if redis.call('EXISTS', k) == 1 then fail('DUPLICATE') end
end
`

// scriptWebhookEnqueue stores a pending delivery.
// KEYS: wh:ev:ID, wh:due, wh:acct:ACCOUNT. ARGV: base, id, account, type,
// job id, created (µs), payload, batch data (JSON, "" for none).
var scriptWebhookEnqueue = script(luaWebhookLib + `
local base, id, account = ARGV[1], ARGV[2], ARGV[3]
dcheck(base, id, account)
dadd(base, id, account, ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])
return 1
`)

// scriptWebhookLease leases the deliveries at the front of wh:due.
// KEYS: wh:due. ARGV: delivery key base (wh:ev:), now (µs), limit,
// expiry (µs), token base. Returns, per delivery, its id, token and
// dfields.
var scriptWebhookLease = script(luaWebhookLib + `
expect(KEYS[1], 'zset')
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local rows = {}
for i, id in ipairs(ids) do
  local k = ARGV[1] .. id
  expect(k, 'hash')
  rows[i] = dread(k)
end
-- writes
local out, z, gone = {}, {}, {}
for i, id in ipairs(ids) do
  local f = rows[i]
  if f and f[6] == 'p' then
    local tok = ARGV[5] .. '.' .. i
    redis.call('HSET', ARGV[1] .. id, 'token', tok, 'expires', ARGV[4])
    z[#z + 1] = ARGV[4]
    z[#z + 1] = id
    out[#out + 1] = id
    out[#out + 1] = tok
    for _, v in ipairs(f) do out[#out + 1] = v end
  else
    gone[#gone + 1] = id
  end
end
if #z > 0 then redis.call('ZADD', KEYS[1], unpack(z)) end
if #gone > 0 then redis.call('ZREM', KEYS[1], unpack(gone)) end
return out
`)

// scriptWebhookChange changes a leased delivery if the token still holds
// it.
// KEYS: wh:ev:ID, wh:due, wh:finished. ARGV: id, token, op, then per op:
// attempt: the attempt (JSON); reschedule: next (µs); deliver and dead:
// finish time (µs), reason.
var scriptWebhookChange = script(luaWebhookLib + `
expect(KEYS[1], 'hash'); expect(KEYS[2], 'zset'); expect(KEYS[3], 'zset')
local id, tok, op = ARGV[1], ARGV[2], ARGV[3]
local f = redis.call('HMGET', KEYS[1], 'state', 'token', 'attempts')
if not f[1] then fail('NOTFOUND') end
if f[1] ~= 'p' or tok == '' or f[2] ~= tok then fail('LEASELOST') end
-- writes
if op == 'attempt' then
  local a = f[3]
  if not a or a == '' or a == '[]' then a = '[' .. ARGV[4] .. ']'
  else a = string.sub(a, 1, -2) .. ',' .. ARGV[4] .. ']' end
  redis.call('HSET', KEYS[1], 'attempts', a)
elseif op == 'reschedule' then
  redis.call('HSET', KEYS[1], 'token', '', 'expires', '', 'next', ARGV[4])
  redis.call('ZADD', KEYS[2], ARGV[4], id)
else
  local st = 'd'
  if op == 'dead' then st = 'x' end
  redis.call('HSET', KEYS[1], 'state', st, 'token', '', 'expires', '', 'next', '', 'finished', ARGV[4], 'reason', ARGV[5])
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZADD', KEYS[3], ARGV[4], id)
end
return 1
`)

// scriptWebhookList returns an account's newest deliveries, older than a
// position when one is given.
// KEYS: wh:acct:ACCOUNT. ARGV: delivery key base, limit, position's
// creation time (µs, "" for none), position's id. Returns, per delivery,
// its id and dfields.
var scriptWebhookList = script(luaWebhookLib + `
expect(KEYS[1], 'zset')
local limit = tonumber(ARGV[2])
local ids
if ARGV[3] == '' then
  ids = redis.call('ZREVRANGE', KEYS[1], 0, limit - 1)
else
  -- Members sharing the position's score come first, those before its
  -- id in the zset's order (by member, descending); then the older ones.
  ids = {}
  local same = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[3], ARGV[3])
  for _, id in ipairs(same) do
    if id < ARGV[4] and #ids < limit then ids[#ids + 1] = id end
  end
  if #ids < limit then
    local older = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. ARGV[3], '-inf', 'LIMIT', 0, limit - #ids)
    for _, id in ipairs(older) do ids[#ids + 1] = id end
  end
end
local out = {}
for _, id in ipairs(ids) do
  local f = dread(ARGV[1] .. id)
  if f then
    out[#out + 1] = id
    for _, v in ipairs(f) do out[#out + 1] = v end
  end
end
return out
`)

// scriptWebhookPrune deletes finished deliveries.
// KEYS: wh:finished. ARGV: base, before (µs, exclusive), limit. Returns
// how many it deleted.
var scriptWebhookPrune = script(luaWebhookLib + `
expect(KEYS[1], 'zset')
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local rows = {}
for i, id in ipairs(ids) do
  local k = ARGV[1] .. 'wh:ev:' .. id
  expect(k, 'hash')
  rows[i] = redis.call('HMGET', k, 'state', 'account')
  if rows[i][2] then expect(ARGV[1] .. 'wh:acct:' .. rows[i][2], 'zset') end
end
-- writes
local n = 0
for i, id in ipairs(ids) do
  local f = rows[i]
  if f[1] == 'd' or f[1] == 'x' then
    redis.call('DEL', ARGV[1] .. 'wh:ev:' .. id)
    redis.call('ZREM', ARGV[1] .. 'wh:acct:' .. f[2], id)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], id)
end
return {n, #ids}
`)

// The endpoint hash wh:ep:ACCOUNT has the fields url, enabled (1 or 0),
// secret, prev (previous secrets as "EXPIRES:SECRET" words, oldest
// first), reason, created and updated.

// scriptEndpointPut creates or updates an endpoint.
// KEYS: wh:ep:ACCOUNT. ARGV: url, enabled, secret, secret valid (1/0),
// now (µs), event types (comma-separated, "" for all). Returns
// {created (1/0), fields...}.
var scriptEndpointPut = script(`
expect(KEYS[1], 'hash')
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  if ARGV[4] ~= '1' then fail('INVALIDSECRET') end
  created = 1
end
-- writes
if created == 1 then
  redis.call('HSET', KEYS[1], 'secret', ARGV[3], 'prev', '', 'reason', '', 'created', ARGV[5])
end
redis.call('HSET', KEYS[1], 'url', ARGV[1], 'enabled', ARGV[2], 'updated', ARGV[5], 'events', ARGV[6])
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'reason', '') end
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, created)
return out
`)

// scriptEndpointRotate replaces an endpoint's secret.
// KEYS: wh:ep:ACCOUNT. ARGV: new secret, now (µs), previous expiry (µs).
// Returns the endpoint's fields.
var scriptEndpointRotate = script(`
expect(KEYS[1], 'hash')
local f = redis.call('HMGET', KEYS[1], 'secret', 'prev')
if not f[1] then fail('NOTFOUND') end
local now = tonumber(ARGV[2])
local kept = {}
for exp, sec in string.gmatch(f[2] or '', '(%-?%d+):(%S+)') do
  if tonumber(exp) > now then kept[#kept + 1] = exp .. ':' .. sec end
end
kept[#kept + 1] = ARGV[3] .. ':' .. f[1]
-- writes
redis.call('HSET', KEYS[1], 'secret', ARGV[1], 'prev', table.concat(kept, ' '), 'updated', ARGV[2])
return redis.call('HGETALL', KEYS[1])
`)

// scriptEndpointDisable disables an endpoint whose URL is still the given
// one.
// KEYS: wh:ep:ACCOUNT. ARGV: url, reason, now (µs).
var scriptEndpointDisable = script(`
expect(KEYS[1], 'hash')
local u = redis.call('HGET', KEYS[1], 'url')
if not u then fail('NOTFOUND') end
if u ~= ARGV[1] then fail('CHANGED') end
redis.call('HSET', KEYS[1], 'enabled', '0', 'reason', ARGV[2], 'updated', ARGV[3])
return 1
`)
