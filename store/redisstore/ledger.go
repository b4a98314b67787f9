package redisstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/validmail/validmail/credits"
)

// scriptHistoryPage reads one page of an account's history, newest first.
// The list holds the entries in id order, so a binary search of LINDEX
// reads finds where the page ends, and LRANGE reads it: the cost is the
// page's, and a few reads, however long the list.
// KEYS: hist:ACCOUNT. ARGV: the id before which the page ends (0: none),
// the page's size. Returns {more (0/1), entry JSON... oldest first}.
var scriptHistoryPage = script(`
expect(KEYS[1], 'list')
local n = redis.call('LLEN', KEYS[1])
local before, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local stop = n
if before > 0 then
  local lo, hi = 0, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local e = cjson.decode(redis.call('LINDEX', KEYS[1], mid))
    if tonumber(e.id) < before then lo = mid + 1 else hi = mid end
  end
  stop = lo
end
local start = math.max(stop - limit, 0)
local out = {0}
if start > 0 then out[1] = 1 end
if stop > start then
  for _, e in ipairs(redis.call('LRANGE', KEYS[1], start, stop - 1)) do out[#out + 1] = e end
end
return out
`)

// scriptTotals reads an account's per-day totals (see credit_total).
// KEYS: hist:ACCOUNT, ctot:ACCOUNT. ARGV: the first day and the day after
// the last, in days since the epoch. Returns {0} when the totals lag the
// history (see scriptTotalsBackfill), else {1, then day, reason, sum,
// count for every day and reason with entries}.
var scriptTotals = script(`
expect(KEYS[1], 'list'); expect(KEYS[2], 'hash')
local upto = tonumber(redis.call('HGET', KEYS[2], 'upto') or '0')
if upto < redis.call('LLEN', KEYS[1]) then return {0} end
local reasons = cjson.decode(redis.call('HGET', KEYS[2], 'reasons') or '[]')
local out = {1}
for d = tonumber(ARGV[1]), tonumber(ARGV[2]) - 1 do
  for _, r in ipairs(reasons) do
    local f = str(d) .. ':' .. r
    local v = redis.call('HMGET', KEYS[2], 's:' .. f, 'n:' .. f)
    if v[1] then
      out[#out + 1] = str(d); out[#out + 1] = r; out[#out + 1] = v[1]; out[#out + 1] = v[2] or '0'
    end
  end
end
return out
`)

// scriptTotalsBackfill adds to the totals the next entries of a history
// they do not hold yet: a history written before the store kept totals.
// Each run counts at most ARGV[1] entries, so a long history is caught up
// over several short scripts; entries appended meanwhile are left to it
// (see credit_total), so none is missed or counted twice.
// KEYS: hist:ACCOUNT, ctot:ACCOUNT. Returns how many entries remain.
var scriptTotalsBackfill = script(`
expect(KEYS[1], 'list'); expect(KEYS[2], 'hash')
local upto = tonumber(redis.call('HGET', KEYS[2], 'upto') or '0')
local n = redis.call('LLEN', KEYS[1])
if upto >= n then return 0 end
local last = math.min(upto + tonumber(ARGV[1]), n) - 1
local sums, counts, order = {}, {}, {}
local rs = cjson.decode(redis.call('HGET', KEYS[2], 'reasons') or '[]')
local known = {}
for _, r in ipairs(rs) do known[r] = true end
for _, raw in ipairs(redis.call('LRANGE', KEYS[1], upto, last)) do
  -- The fields counted, read by pattern where they hold no escape (the
  -- keys themselves are never escaped), else by decoding the entry.
  local e = {t = string.match(raw, '"t":"(%d+)"'), delta = string.match(raw, '"delta":"(%-?%d+)"'),
    reason = string.match(raw, '"reason":"([^"\\]*)"')}
  if not (e.t and e.delta and e.reason) then e = cjson.decode(raw) end
  local f = str(math.floor(tonumber(e.t) / 86400000000)) .. ':' .. e.reason
  if not sums[f] then
    sums[f], counts[f] = 0, 0
    order[#order + 1] = f
  end
  sums[f] = sums[f] + tonumber(e.delta)
  counts[f] = counts[f] + 1
  if not known[e.reason] then
    known[e.reason] = true
    rs[#rs + 1] = e.reason
  end
end
for _, f in ipairs(order) do
  redis.call('HINCRBY', KEYS[2], 's:' .. f, str(sums[f]))
  redis.call('HINCRBY', KEYS[2], 'n:' .. f, str(counts[f]))
end
if #rs > 0 then redis.call('HSET', KEYS[2], 'reasons', cjson.encode(rs)) end
redis.call('HSET', KEYS[2], 'upto', str(last + 1))
return n - last - 1
`)

// backfillChunk is how many entries one run of scriptTotalsBackfill
// counts: a few milliseconds of the server's time, so that other clients
// wait little behind it.
const backfillChunk = 1000

// HistoryPage implements [credits.PageStore] with one script
// (scriptHistoryPage).
func (s *Store) HistoryPage(ctx context.Context, p credits.PageParams) (credits.Page, error) {
	if err := checkCtx(ctx, "history page"); err != nil {
		return credits.Page{}, err
	}
	var before uint64
	if p.Before != "" {
		var err error
		if before, err = credits.ParseID(p.Before); err != nil {
			return credits.Page{}, err
		}
	}
	res, err := s.run(ctx, scriptHistoryPage, []string{s.acctKey(p.AccountID, "hist:"+p.AccountID)},
		strconv.FormatUint(before, 10), strconv.Itoa(p.Limit)).Slice()
	if err != nil {
		return credits.Page{}, s.wrap(ctx, "history page", err)
	}
	if len(res) < 1 {
		return credits.Page{}, fmt.Errorf("%w: history page reply %v", ErrBadData, res)
	}
	page := credits.Page{More: res[0] == int64(1), Entries: make([]credits.Entry, 0, len(res)-1)}
	for _, r := range slices.Backward(res[1:]) {
		raw, _ := r.(string)
		e, err := decodeEntry(raw)
		if err != nil {
			return credits.Page{}, err
		}
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// Totals implements [credits.TotalsStore] from the totals credit_total
// keeps in the script writing each entry. A history written before this
// version kept totals is counted once, on its first read, by
// scriptTotalsBackfill.
func (s *Store) Totals(ctx context.Context, p credits.TotalsParams) ([]credits.DayTotal, error) {
	if err := checkCtx(ctx, "totals"); err != nil {
		return nil, err
	}
	keys := []string{s.acctKey(p.AccountID, "hist:"+p.AccountID), s.acctKey(p.AccountID, "ctot:"+p.AccountID)}
	from, to := epochDay(p.From), epochDay(p.To)
	// The first read of a history older than the totals counts it; the
	// totals then keep pace with every entry, so a second read answers.
	for range 2 {
		res, err := s.run(ctx, scriptTotals, keys, strconv.FormatInt(from, 10), strconv.FormatInt(to, 10)).Slice()
		if err != nil {
			return nil, s.wrap(ctx, "totals", err)
		}
		if len(res) < 1 || (len(res)-1)%4 != 0 {
			return nil, fmt.Errorf("%w: totals reply %v", ErrBadData, res)
		}
		if res[0] == int64(1) {
			return decodeTotals(res[1:])
		}
		if err := s.backfillTotals(ctx, keys); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: totals of %q lag its history after a backfill", ErrBadData, p.AccountID)
}

// backfillTotals runs scriptTotalsBackfill until the totals hold the
// whole history.
func (s *Store) backfillTotals(ctx context.Context, keys []string) error {
	for {
		left, err := s.run(ctx, scriptTotalsBackfill, keys, backfillChunk).Int64()
		if err != nil {
			return s.wrap(ctx, "totals: backfill", err)
		}
		if left == 0 {
			return nil
		}
	}
}

func decodeTotals(res []any) ([]credits.DayTotal, error) {
	out := make([]credits.DayTotal, 0, len(res)/4)
	for i := 0; i+3 < len(res); i += 4 {
		var f [4]string
		for j := range f {
			f[j], _ = res[i+j].(string)
		}
		day, err1 := strconv.ParseInt(f[0], 10, 64)
		sum, err2 := strconv.ParseInt(f[2], 10, 64)
		count, err3 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || day < 0 || day > math.MaxInt32 {
			return nil, fmt.Errorf("%w: totals %q", ErrBadData, f)
		}
		out = append(out, credits.DayTotal{
			Day:    time.Unix(day*secondsPerDay, 0).UTC(),
			Reason: credits.Reason(f[1]),
			Sum:    sum,
			Count:  count,
		})
	}
	credits.SortTotals(out)
	return out, nil
}

// secondsPerDay is the length of a UTC day.
const secondsPerDay = 24 * 60 * 60

// epochDay is the UTC day of t, in days since the epoch.
func epochDay(t time.Time) int64 {
	return credits.Day(t).Unix() / secondsPerDay
}
