package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.BatchDriver = (*jobsDriver)(nil)

// batchFrom reads a batch's record (bt:ID) for the account; a record of
// another account, or none, is [jobtype.ErrNotFound].
func batchFrom(id, account string, m map[string]string) (jobtype.Batch, error) {
	if len(m) == 0 || m["account"] != account {
		return jobtype.Batch{}, jobtype.ErrNotFound
	}
	b := jobtype.Batch{ID: id, AccountID: account, Source: cmp.Or(m["source"], jobtype.SourceAPI), Counts: map[emailcheck.Status]int{}, Name: m["name"]}
	b.Number, _ = strconv.ParseInt(m["no"], 10, 64)
	var err1, err2, err3, err4 error
	b.Total, err1 = strconv.Atoi(m["total"])
	b.Completed, err2 = strconv.Atoi(cmp.Or(m["done"], "0"))
	b.CreatedAt, err3 = micros(m["created"])
	b.CompletedAt, err4 = micros(m["completed"])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return jobtype.Batch{}, fmt.Errorf("%w: batch %s: %v", ErrBadData, id, err)
	}
	for k, v := range m {
		if status, ok := strings.CutPrefix(k, "c:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return jobtype.Batch{}, fmt.Errorf("%w: batch %s: count of %s", ErrBadData, id, status)
			}
			b.Counts[emailcheck.Status(status)] = n
		}
	}
	b.State = jobtype.StateActive
	if b.Completed >= b.Total {
		b.State = jobtype.StateCompleted
	} else {
		b.CompletedAt = time.Time{}
	}
	return b, nil
}

// batchJobs reads the jobs of the account's batch still kept, from id
// after+1 (0 for the start) and at most limit of them (0 for all): the
// batch's jobs are consecutive ids from its first, so one pipeline reads
// exactly the range asked for.
func (s *Store) batchJobs(ctx context.Context, account, batchID string, after int64, limit int) ([]jobtype.Job, error) {
	if !validID(batchID) {
		return nil, jobtype.ErrNotFound
	}
	m, err := s.rdb.HGetAll(ctx, s.idBase(batchID)+"bt:"+batchID).Result()
	if err != nil {
		return nil, s.wrap(ctx, "batch", err)
	}
	b, err := batchFrom(batchID, account, m)
	if err != nil {
		return nil, err
	}
	first, err := strconv.ParseInt(batchID, 10, 64)
	if err != nil || b.Total < 1 {
		return nil, jobtype.ErrNotFound
	}
	from, to := max(first, after+1), first+int64(b.Total)-1
	if limit > 0 {
		to = min(to, from+int64(limit)-1)
	}
	if from > to {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 0, to-from+1)
	for id := from; id <= to; id++ {
		cmds = append(cmds, pipe.HGetAll(ctx, s.idBase(batchID)+"job:"+strconv.FormatInt(id, 10)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.wrap(ctx, "batch jobs", err)
	}
	out := make([]jobtype.Job, 0, len(cmds))
	for i, c := range cmds {
		h := c.Val()
		if len(h) == 0 || h["batch"] != batchID {
			continue // removed after the retention
		}
		j, err := jobFromHash(strconv.FormatInt(from+int64(i), 10), h)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// Batch implements [jobsdriver.BatchDriver]: the batch's record, whose counters
// the completions keep.
func (s *jobsDriver) Batch(ctx context.Context, accountID, batchID string) (jobtype.Batch, error) {
	if err := checkCtx(ctx, "batch"); err != nil {
		return jobtype.Batch{}, err
	}
	if !validID(batchID) {
		return jobtype.Batch{}, jobtype.ErrNotFound
	}
	m, err := s.rdb.HGetAll(ctx, s.idBase(batchID)+"bt:"+batchID).Result()
	if err != nil {
		return jobtype.Batch{}, s.wrap(ctx, "batch", err)
	}
	return batchFrom(batchID, accountID, m)
}

// Batches implements [jobsdriver.BatchDriver]: the account's list of batches,
// then their records in one pipeline.
func (s *jobsDriver) Batches(ctx context.Context, p jobtype.BatchesParams) ([]jobtype.Batch, error) {
	if err := checkCtx(ctx, "batches"); err != nil {
		return nil, err
	}
	maxScore := "+inf"
	if p.Before != "" {
		if !validID(p.Before) {
			return nil, nil
		}
		maxScore = "(" + p.Before
	}
	list := s.acctKey(p.AccountID, "batches:"+p.AccountID)
	out := make([]jobtype.Batch, 0, p.Limit)
	for len(out) < p.Limit {
		// Batches past their retention are skipped and forgotten, so a
		// page may take more than one read.
		ids, err := s.rdb.ZRevRangeByScore(ctx, list, &redis.ZRangeBy{Max: maxScore, Min: "-inf", Count: int64(p.Limit - len(out))}).Result()
		if err != nil {
			return nil, s.wrap(ctx, "batches", err)
		}
		if len(ids) == 0 {
			break
		}
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(ids))
		for i, id := range ids {
			cmds[i] = pipe.HGetAll(ctx, s.idBase(id)+"bt:"+id)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, s.wrap(ctx, "batches", err)
		}
		var gone []any
		for i, id := range ids {
			b, err := batchFrom(id, p.AccountID, cmds[i].Val())
			if errors.Is(err, jobtype.ErrNotFound) {
				gone = append(gone, id)
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		if len(gone) > 0 {
			if err := s.rdb.ZRem(ctx, list, gone...).Err(); err != nil {
				return nil, s.wrap(ctx, "batches", err)
			}
		}
		maxScore = "(" + ids[len(ids)-1]
	}
	return out, nil
}

// BatchJobs implements [jobsdriver.BatchDriver].
func (s *jobsDriver) BatchJobs(ctx context.Context, p jobtype.BatchJobsParams) ([]jobtype.Job, error) {
	if err := checkCtx(ctx, "batch jobs"); err != nil {
		return nil, err
	}
	after := int64(0)
	if p.After != "" {
		n, err := strconv.ParseInt(p.After, 10, 64)
		if err != nil {
			return nil, nil
		}
		after = n
	}
	return s.batchJobs(ctx, p.AccountID, p.BatchID, after, p.Limit)
}

var _ jobsdriver.BatchDeleter = (*jobsDriver)(nil)

// scriptBatchDelete removes a batch's record, so that it reads as gone at
// once, and the jobs of a batch that is not a list; a list is marked
// being removed ("x"), its jobs and rows then dropped a bounded number a
// script ([Store.dropList], resumed by Cleanup). Ids of removed jobs left
// in the queues' sorted sets are skipped and dropped by their readers.
// KEYS: bt:ID, batches:ACCOUNT, lst:ID, lists. ARGV: shard base, batch
// id, account. Returns 0 for no such batch of the account, 1 for a batch
// removed, 2 for a list whose jobs and rows remain to drop.
var scriptBatchDelete = script(`
expect(KEYS[2], 'zset'); expect(KEYS[4], 'zset')
local m = redis.call('HMGET', KEYS[1], 'account', 'total')
if m[1] ~= ARGV[3] then return 0 end
local st = redis.call('HGET', KEYS[3], 'state')
-- writes
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
if st == 'ok' then
  redis.call('HSET', KEYS[3], 'state', 'x')
  redis.call('ZADD', KEYS[4], 0, ARGV[2])
  return 2
end
local first = tonumber(ARGV[2])
for i = 0, tonumber(m[2] or '0') - 1 do
  local key = ARGV[1] .. 'job:' .. str(first + i)
  if redis.call('HGET', key, 'batch') == ARGV[2] then redis.call('UNLINK', key) end
end
return 1
`)

// DeleteBatch implements [jobsdriver.BatchDeleter] with [scriptBatchDelete],
// then, for a list, drops its jobs and rows.
func (s *jobsDriver) DeleteBatch(ctx context.Context, accountID, batchID string) error {
	if err := checkCtx(ctx, "delete batch"); err != nil {
		return err
	}
	k, ok := idShard(batchID)
	if !ok || !validID(batchID) || k != accountShard(accountID) {
		return jobtype.ErrNotFound
	}
	base := s.shardBase(k)
	keys := []string{base + "bt:" + batchID, s.acctKey(accountID, "batches:"+accountID), base + "lst:" + batchID, base + "lists"}
	n, err := s.run(ctx, scriptBatchDelete, keys, base, batchID, accountID).Int()
	if err != nil {
		return s.wrap(ctx, "delete batch", err)
	}
	switch n {
	case 0:
		return jobtype.ErrNotFound
	case 2:
		// Unreadable already; what a failure leaves, Cleanup drops.
		if err := s.dropList(ctx, base, batchID, false); err != nil {
			s.logger.WarnContext(ctx, "redisstore: deleted list's rows left to the cleanup", "batch", batchID, "err", err)
		}
	}
	return nil
}
