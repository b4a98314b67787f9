package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.ListDriver = (*jobsDriver)(nil)

// A list lives in its account's shard:
//   - lst:FIRST, a hash: its description, its state ("s" staging, "ok"
//     committed, "x" being removed), the ids reserved (cap) and used
//     (next), the counts;
//   - lstk:FIRST, a hash: key → job id, while staging;
//   - lststage:FIRST, a sorted set: the staged jobs, moved to the ready
//     set by the commit;
//   - lstr:FIRST:C, a list per 1,000 rows (rows C*1000 …): "JOBID\tRECORD",
//     RECORD the row's fields as a JSON array, JOBID empty for a row that
//     is not an address;
//   - lstpending, a sorted set of the lists staging, scored by when they
//     are abandoned (an hour after their last chunk); lists, a sorted set
//     of the committed lists, until their batch is gone.
//
// Staged jobs are hashes like any job's, but in no ready set and in no
// batch record: no worker leases them and no listing shows them. The
// commit (one script) charges the unique addresses, writes the batch's
// record, and moves the staged jobs into the ready set, so the list
// becomes visible and charged at once. A list abandoned while staging (a
// crash of the uploading process) is removed by Cleanup once its
// deadline passes.

// listAbandonAfter is how long a staging list may go without a chunk
// before Cleanup removes it.
const listAbandonAfter = time.Hour

// listChunk is how many rows one lstr list holds.
const listChunk = 1000

// scriptListBegin reserves a list's job ids and records it as staging.
// KEYS: seq:job, lstpending. ARGV: shard base, id offset, rows, account,
// source, cost, name, header (JSON), column, charge (0/1), deadline (µs),
// free addresses.
// Returns the first id: the list's batch id.
var scriptListBegin = script(`
expect(KEYS[1], 'string'); expect(KEYS[2], 'zset')
local base, off, rows = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('SET', KEYS[1], str(last + rows))
local first = str(off + last + 1)
local lk = base .. 'lst:' .. first
if redis.call('EXISTS', lk) == 1 then fail('BADTYPE a new list key exists') end
redis.call('HSET', lk, 'state', 's', 'account', ARGV[4], 'first', first, 'cap', rows, 'next', 0,
  'dups', 0, 'junk', 0, 'rows', 0, 'source', ARGV[5], 'cost', ARGV[6], 'created', str(now_us()),
  'name', ARGV[7], 'header', ARGV[8], 'col', ARGV[9], 'charge', ARGV[10], 'free', ARGV[12])
redis.call('ZADD', KEYS[2], ARGV[11], first)
return first
`)

// scriptListAppend stages rows. KEYS: lst, lstk, lststage, lstpending.
// ARGV: shard base, batch id, number of the first row, deadline (µs),
// then per row its key ("" for no address), address and record.
var scriptListAppend = script(`
local base, batch, n0 = ARGV[1], ARGV[2], tonumber(ARGV[3])
local m = redis.call('HMGET', KEYS[1], 'state', 'first', 'cap', 'next', 'account', 'source', 'cost', 'created', 'dups', 'junk', 'rows', 'free')
local free = tonumber(m[12] or '0')
if m[1] ~= 's' then fail('NOTFOUND') end
if tonumber(m[11]) ~= n0 then fail('BADTYPE list rows out of order') end
expect(KEYS[2], 'hash'); expect(KEYS[3], 'zset')
local first, cap, nxt = tonumber(m[2]), tonumber(m[3]), tonumber(m[4])
local dups, junk = tonumber(m[9]), tonumber(m[10])
local jobbase = base .. 'job:'
local z = {}
local row = n0
for i = 5, #ARGV, 3 do
  local key, email, rec = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local id = ''
  if key == '' then
    junk = junk + 1
  else
    local seen = redis.call('HGET', KEYS[2], key)
    if seen then
      dups = dups + 1
      id = seen
    else
      if nxt >= cap then fail('BADTYPE list beyond its reserved ids') end
      id = str(first + nxt)
      nxt = nxt + 1
      redis.call('HSET', KEYS[2], key, id)
      local cost = m[7]
      if nxt <= free then cost = '0' end
      redis.call('HSET', jobbase .. id, 'account', m[5], 'email', email, 'cost', cost, 'state', 'a',
        'created', m[8], 'batch', str(first))
      if m[6] ~= 'api' then redis.call('HSET', jobbase .. id, 'source', m[6]) end
      z[#z + 1] = id
      z[#z + 1] = id
      if #z >= 1000 then
        redis.call('ZADD', KEYS[3], unpack(z))
        z = {}
      end
    end
  end
  redis.call('RPUSH', base .. 'lstr:' .. batch .. ':' .. str(math.floor(row / 1000)), id .. '\t' .. rec)
  row = row + 1
end
if #z > 0 then redis.call('ZADD', KEYS[3], unpack(z)) end
redis.call('HSET', KEYS[1], 'next', nxt, 'dups', dups, 'junk', junk, 'rows', row)
redis.call('ZADD', KEYS[4], ARGV[4], batch)
return nxt
`)

// scriptListCommit charges a staged list's unique addresses, writes its
// batch's record and moves its jobs to the ready set, or fails (EMPTY,
// INSUFFICIENT, CONFLICT) having written nothing. KEYS: lst, lstk,
// lststage, rq:ACCOUNT (the account's queue of ready jobs), lstpending,
// lists, the ledger keys of the account, last idk:ACCOUNT:KEY (the list's
// idempotency record). ARGV: shard base, channel, idempotency key,
// fingerprint, TTL of the record (ms).
// The record is "list:FIRST:FINGERPRINT". When the key names a list of
// the same fingerprint, the script writes nothing and returns {"replay",
// first}; else {first, addresses, rows, duplicates, invalid rows,
// charged}.
var scriptListCommit = script(`
local base = ARGV[1]
local m = redis.call('HMGET', KEYS[1], 'state', 'account', 'first', 'next', 'rows', 'dups', 'junk', 'charge', 'source', 'name', 'free')
if m[1] ~= 's' then fail('NOTFOUND') end
local ikey, fp, idk = ARGV[3], ARGV[4], KEYS[#KEYS]
if ikey ~= '' then
  expect(idk, 'string')
  local prev = redis.call('GET', idk)
  if prev then
    local pfirst, pfp = string.match(prev, '^list:(%d+):(.*)$')
    if not pfirst or pfp ~= fp then fail('CONFLICT') end
    return {'replay', pfirst}
  end
end
local account, first, n = m[2], m[3], tonumber(m[4])
if n == 0 then fail('EMPTY') end
expect(KEYS[3], 'zset'); expect(KEYS[4], 'zset'); expect(KEYS[6], 'zset')
local t = now_us()
local charged = 0
local due = n - math.min(tonumber(m[11] or '0'), n)
if m[8] == '1' and due > 0 then
  local k = credit_keys_at(7)
  credit_check(k, str(-due), 'charge', '')
  credit_write(k, account, str(-due), 'charge', 'list:' .. first, '', t)
  charged = due
end
local no = redis.call('HINCRBY', base .. 'bno', account, 1)
redis.call('HSET', base .. 'bt:' .. first, 'account', account, 'total', n, 'created', str(t),
  'source', m[9], 'done', 0, 'name', m[10], 'no', no)
redis.call('ZADD', base .. 'batches:' .. account, tonumber(first), first)
if redis.call('EXISTS', KEYS[4]) == 0 then
  redis.call('RENAME', KEYS[3], KEYS[4])
else
  redis.call('ZUNIONSTORE', KEYS[4], 2, KEYS[4], KEYS[3])
  redis.call('DEL', KEYS[3])
end
redis.call('HSET', KEYS[1], 'state', 'ok', 'charged', charged)
redis.call('ZREM', KEYS[5], first)
redis.call('ZADD', KEYS[6], tonumber(first), first)
activate(base, account)
redis.call('UNLINK', KEYS[2])
if ikey ~= '' then redis.call('SET', idk, 'list:' .. first .. ':' .. fp, 'PX', ARGV[5]) end
redis.call('PUBLISH', ARGV[2], 'jobs')
return {first, str(n), m[5], m[6], m[7], str(charged)}
`)

// scriptListDrop removes a list that is staging (an abort, or abandoned:
// its staged jobs too) or whose batch is gone (its rows), a bounded
// number of keys per call. KEYS: lst, lstk, lststage, lstpending, lists.
// ARGV: shard base, batch id, the most keys to remove, force (1: an
// abort, whatever the deadline).
// Returns 1 while keys remain, else 0.
var scriptListDrop = script(`
local base, batch, budget = ARGV[1], ARGV[2], tonumber(ARGV[3])
local m = redis.call('HMGET', KEYS[1], 'state', 'next', 'rows')
if not m[1] then
  redis.call('ZREM', KEYS[4], batch)
  redis.call('ZREM', KEYS[5], batch)
  return 0
end
if m[1] == 'ok' then
  if redis.call('EXISTS', base .. 'bt:' .. batch) == 1 then return 0 end
elseif m[1] == 's' then
  if ARGV[4] ~= '1' then
    local due = redis.call('ZSCORE', KEYS[4], batch)
    local t = redis.call('TIME')
    if due and tonumber(due) > tonumber(t[1]) * 1000000 + tonumber(t[2]) then return 0 end
  end
  redis.call('HSET', KEYS[1], 'state', 'x')
  m[1] = 'x'
end
local first, nxt, rows = tonumber(batch), tonumber(m[2]), tonumber(m[3])
if m[1] == 'x' then
  while nxt > 0 and budget > 0 do
    nxt = nxt - 1
    budget = budget - 1
    redis.call('UNLINK', base .. 'job:' .. str(first + nxt))
  end
  redis.call('HSET', KEYS[1], 'next', nxt)
  if nxt > 0 then return 1 end
end
while rows > 0 and budget > 0 do
  local c = math.floor((rows - 1) / 1000)
  redis.call('UNLINK', base .. 'lstr:' .. batch .. ':' .. str(c))
  rows = c * 1000
  budget = budget - 1
end
redis.call('HSET', KEYS[1], 'rows', rows)
if rows > 0 then return 1 end
redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], batch)
redis.call('ZREM', KEYS[5], batch)
return 0
`)

// listWriter stages a list with one script per chunk.
type listWriter struct {
	s      *Store
	k      int
	base   string
	batch  string
	p      jobtype.BeginListParams
	closed bool
	done   bool
}

func (w *listWriter) keys() []string {
	b := w.base
	return []string{b + "lst:" + w.batch, b + "lstk:" + w.batch, b + "lststage:" + w.batch, b + "lstpending", b + "lists"}
}

func deadline() int64 { return time.Now().Add(listAbandonAfter).UnixMicro() }

// BeginList implements [jobsdriver.ListDriver]: one script reserves an id for
// every row (the unique addresses are at most that many; the batch's jobs
// are the first of them, consecutive) and records the list as staging.
func (s *jobsDriver) BeginList(ctx context.Context, p jobtype.BeginListParams) (jobtype.ListWriter, error) {
	if err := checkCtx(ctx, "begin list"); err != nil {
		return nil, err
	}
	if p.Rows < 1 {
		return nil, jobtype.ErrEmptyBatch
	}
	k := accountShard(p.AccountID)
	base := s.shardBase(k)
	hd := p.Header
	if hd == nil {
		hd = []string{}
	}
	header, _ := json.Marshal(hd)
	charge, cost := "0", "0"
	if p.Charge {
		charge, cost = "1", "1"
	}
	first, err := s.run(ctx, scriptListBegin, []string{base + "seq:job", base + "lstpending"},
		base, idOffset(k), p.Rows, p.AccountID, cmp.Or(p.Source, jobtype.SourceAPI), cost, p.Name, string(header), p.Column, charge, deadline(), p.Free).Text()
	if err != nil {
		return nil, s.wrap(ctx, "begin list", err)
	}
	return &listWriter{s: s.Store, k: k, base: base, batch: first, p: p}, nil
}

// Append implements [jobtype.ListWriter].
func (w *listWriter) Append(ctx context.Context, rows []jobtype.ListRow) error {
	if w.closed {
		return jobtype.ErrListClosed
	}
	for len(rows) > 0 {
		part := rows[:min(len(rows), listChunk)]
		rows = rows[len(part):]
		args := make([]any, 0, 4+3*len(part))
		args = append(args, w.base, w.batch, part[0].N, deadline())
		for _, r := range part {
			rec, err := json.Marshal(r.Record)
			if err != nil {
				return fmt.Errorf("redisstore: list row %d: %w", r.N, err)
			}
			args = append(args, r.Key, r.Email, string(rec))
		}
		if err := w.s.run(ctx, scriptListAppend, w.keys()[:4], args...).Err(); err != nil {
			return w.s.wrap(ctx, "list rows", err)
		}
	}
	return nil
}

// Commit implements [jobtype.ListWriter]: one script charges, writes the
// batch and readies the jobs. A refused commit leaves the staged list to
// Abort.
func (w *listWriter) Commit(ctx context.Context) (jobtype.ListInfo, error) {
	if w.closed {
		return jobtype.ListInfo{}, jobtype.ErrListClosed
	}
	w.closed = true
	s := w.s
	keys := w.keys()
	keys = append([]string{keys[0], keys[1], keys[2], w.base + "rq:" + w.p.AccountID, keys[3], keys[4]}, s.creditKeys(w.p.AccountID)...)
	keys = append(keys, w.base+"idk:"+w.p.AccountID+":"+w.p.IdempotencyKey)
	ttl := cmp.Or(w.p.IdempotencyTTL, jobtype.DefaultIdempotencyTTL)
	res, err := s.run(ctx, scriptListCommit, keys, w.base, s.channel(), w.p.IdempotencyKey, w.p.Fingerprint, max(ttl.Milliseconds(), 1)).StringSlice()
	if c, _ := code(err); c == "CONFLICT" || (err == nil && len(res) == 2 && res[0] == "replay") {
		// The key named an earlier list: what was staged goes.
		if derr := w.Abort(context.WithoutCancel(ctx)); derr != nil {
			s.logger.WarnContext(ctx, "redisstore: drop a replayed list's staging", "err", derr)
		}
		if err != nil {
			return jobtype.ListInfo{}, s.creditErr(ctx, "commit list", 0, err)
		}
		info, err := (&jobsDriver{s}).List(ctx, w.p.AccountID, res[1])
		if errors.Is(err, jobtype.ErrNotFound) {
			return jobtype.ListInfo{}, jobtype.ErrBatchReplayed
		}
		info.Replayed = err == nil
		return info, err
	}
	if err != nil {
		if c, _ := code(err); c == "EMPTY" {
			return jobtype.ListInfo{}, jobtype.ErrEmptyBatch
		}
		var m int64
		if c, _ := code(err); c == "INSUFFICIENT" {
			m, _ = s.rdb.HGet(ctx, keys[0], "next").Int64()
			m -= min(int64(w.p.Free), m)
		}
		return jobtype.ListInfo{}, s.creditErr(ctx, "commit list", m, err)
	}
	w.done = true
	s.busy.Or(1 << w.k)
	n := make([]int64, len(res))
	for i, v := range res {
		n[i], _ = strconv.ParseInt(v, 10, 64)
	}
	return jobtype.ListInfo{
		BatchID: res[0], AccountID: w.p.AccountID, Name: w.p.Name, Header: w.p.Header, Column: w.p.Column,
		Addresses: int(n[1]), Rows: int(n[2]), Duplicates: int(n[3]), InvalidRows: int(n[4]), Charged: n[5],
	}, nil
}

// Abort implements [jobtype.ListWriter]: the staged jobs and rows are
// removed, a bounded number of keys per script.
func (w *listWriter) Abort(ctx context.Context) error {
	if w.done {
		return nil
	}
	w.closed, w.done = true, true
	return w.s.dropList(ctx, w.base, w.batch, true)
}

// dropList runs scriptListDrop until it is done.
func (s *Store) dropList(ctx context.Context, base, batch string, force bool) error {
	f := "0"
	if force {
		f = "1"
	}
	keys := []string{base + "lst:" + batch, base + "lstk:" + batch, base + "lststage:" + batch, base + "lstpending", base + "lists"}
	for {
		more, err := s.run(ctx, scriptListDrop, keys, base, batch, 2000, f).Int()
		if err != nil {
			return s.wrap(ctx, "drop list", err)
		}
		if more == 0 {
			return nil
		}
	}
}

// cleanupLists removes the lists abandoned while staging and those whose
// batch is gone.
func (s *Store) cleanupLists(ctx context.Context) error {
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	for k := range shardCount {
		base := s.shardBase(k)
		abandoned, err := s.rdb.ZRangeByScore(ctx, base+"lstpending", &redis.ZRangeBy{Min: "-inf", Max: now, Count: 100}).Result()
		if err != nil {
			return s.wrap(ctx, "cleanup lists", err)
		}
		committed, err := s.rdb.ZRange(ctx, base+"lists", 0, 999).Result()
		if err != nil {
			return s.wrap(ctx, "cleanup lists", err)
		}
		for _, b := range append(abandoned, committed...) {
			if err := s.dropList(ctx, base, b, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// listInfo reads a list's description for the account; staging lists and
// others' are [jobtype.ErrNotFound].
func (s *Store) listInfo(ctx context.Context, accountID, batchID string) (jobtype.ListInfo, error) {
	if !validID(batchID) {
		return jobtype.ListInfo{}, jobtype.ErrNotFound
	}
	m, err := s.rdb.HGetAll(ctx, s.idBase(batchID)+"lst:"+batchID).Result()
	if err != nil {
		return jobtype.ListInfo{}, s.wrap(ctx, "list", err)
	}
	if m["state"] != "ok" || m["account"] != accountID {
		return jobtype.ListInfo{}, jobtype.ErrNotFound
	}
	info := jobtype.ListInfo{BatchID: batchID, AccountID: accountID, Name: m["name"]}
	if err := json.Unmarshal([]byte(m["header"]), &info.Header); err != nil {
		return jobtype.ListInfo{}, fmt.Errorf("%w: list %s: header", ErrBadData, batchID)
	}
	info.Column, _ = strconv.Atoi(m["col"])
	info.Rows, _ = strconv.Atoi(m["rows"])
	info.Addresses, _ = strconv.Atoi(m["next"])
	info.Duplicates, _ = strconv.Atoi(m["dups"])
	info.InvalidRows, _ = strconv.Atoi(m["junk"])
	info.Charged, _ = strconv.ParseInt(m["charged"], 10, 64)
	return info, nil
}

// List implements [jobsdriver.ListDriver].
func (s *jobsDriver) List(ctx context.Context, accountID, batchID string) (jobtype.ListInfo, error) {
	if err := checkCtx(ctx, "list"); err != nil {
		return jobtype.ListInfo{}, err
	}
	info, err := s.listInfo(ctx, accountID, batchID)
	if err != nil {
		return jobtype.ListInfo{}, err
	}
	if _, err := s.Batch(ctx, accountID, batchID); err != nil {
		return jobtype.ListInfo{}, err
	}
	return info, nil
}

// ListRows implements [jobsdriver.ListDriver]: the rows' chunks in one
// pipeline, then their jobs in another.
func (s *jobsDriver) ListRows(ctx context.Context, p jobtype.ListRowsParams) ([]jobtype.ListRow, error) {
	if err := checkCtx(ctx, "list rows"); err != nil {
		return nil, err
	}
	info, err := s.listInfo(ctx, p.AccountID, p.BatchID)
	if err != nil {
		return nil, err
	}
	from := max(p.After+1, 0)
	to := min(from+p.Limit, info.Rows) // exclusive
	if from >= to {
		return nil, nil
	}
	base := s.idBase(p.BatchID)
	pipe := s.rdb.Pipeline()
	var cmds []*redis.StringSliceCmd
	for c := from / listChunk; c <= (to-1)/listChunk; c++ {
		lo, hi := max(from-c*listChunk, 0), min(to-c*listChunk, listChunk)-1
		cmds = append(cmds, pipe.LRange(ctx, base+"lstr:"+p.BatchID+":"+strconv.Itoa(c), int64(lo), int64(hi)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.wrap(ctx, "list rows", err)
	}
	out := make([]jobtype.ListRow, 0, to-from)
	var ids []string
	for _, c := range cmds {
		for _, e := range c.Val() {
			id, rec, ok := strings.Cut(e, "\t")
			if !ok {
				return nil, fmt.Errorf("%w: list %s: row", ErrBadData, p.BatchID)
			}
			row := jobtype.ListRow{N: from + len(out)}
			if err := json.Unmarshal([]byte(rec), &row.Record); err != nil {
				return nil, fmt.Errorf("%w: list %s: row %d", ErrBadData, p.BatchID, row.N)
			}
			row.Email = id // the job's id until read below
			out = append(out, row)
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > 0 {
		pipe := s.rdb.Pipeline()
		jc := make(map[string]*redis.MapStringStringCmd, len(ids))
		for _, id := range ids {
			if _, ok := jc[id]; !ok {
				jc[id] = pipe.HGetAll(ctx, base+"job:"+id)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, s.wrap(ctx, "list rows: jobs", err)
		}
		for i := range out {
			id := out[i].Email
			out[i].Email = ""
			if id == "" {
				continue
			}
			h := jc[id].Val()
			if len(h) == 0 || h["batch"] != p.BatchID {
				continue // removed after the retention
			}
			j, err := jobFromHash(id, h)
			if err != nil {
				return nil, err
			}
			out[i].Job = &j
		}
	}
	return out, nil
}
