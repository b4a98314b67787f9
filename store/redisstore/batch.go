package redisstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/jobs"
)

var _ jobs.BatchDriver = (*Store)(nil)

// batchJobs reads the jobs of the account's batch still kept, from id
// after+1 (0 for the start) and at most limit of them (0 for all): the
// batch's jobs are consecutive ids from its first, so one pipeline reads
// exactly the range asked for.
func (s *Store) batchJobs(ctx context.Context, account, batchID string, after int64, limit int) ([]jobs.Job, error) {
	if !validID(batchID) {
		return nil, jobs.ErrNotFound
	}
	m, err := s.rdb.HGetAll(ctx, s.key("bt:"+batchID)).Result()
	if err != nil {
		return nil, s.wrap(ctx, "batch", err)
	}
	if len(m) == 0 || m["account"] != account {
		return nil, jobs.ErrNotFound
	}
	first, err1 := strconv.ParseInt(batchID, 10, 64)
	total, err2 := strconv.ParseInt(m["total"], 10, 64)
	if err1 != nil || err2 != nil || total < 1 {
		return nil, jobs.ErrNotFound
	}
	from, to := max(first, after+1), first+total-1
	if limit > 0 {
		to = min(to, from+int64(limit)-1)
	}
	if from > to {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 0, to-from+1)
	for id := from; id <= to; id++ {
		cmds = append(cmds, pipe.HGetAll(ctx, s.key("job:"+strconv.FormatInt(id, 10))))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.wrap(ctx, "batch jobs", err)
	}
	out := make([]jobs.Job, 0, len(cmds))
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
	if len(out) == 0 && after == 0 {
		return nil, jobs.ErrNotFound
	}
	return out, nil
}

// Batch implements [jobs.BatchDriver].
func (s *Store) Batch(ctx context.Context, accountID, batchID string) (jobs.Batch, error) {
	if err := checkCtx(ctx, "batch"); err != nil {
		return jobs.Batch{}, err
	}
	js, err := s.batchJobs(ctx, accountID, batchID, 0, 0)
	if err != nil {
		return jobs.Batch{}, err
	}
	return jobs.SummarizeBatch(batchID, accountID, js), nil
}

// Batches implements [jobs.BatchDriver].
func (s *Store) Batches(ctx context.Context, p jobs.BatchesParams) ([]jobs.Batch, error) {
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
	// Ask for a few more than needed: batches past their retention are
	// skipped.
	ids, err := s.rdb.ZRevRangeByScore(ctx, s.key("batches:"+p.AccountID), &redis.ZRangeBy{Max: maxScore, Min: "-inf", Count: int64(p.Limit) * 2}).Result()
	if err != nil {
		return nil, s.wrap(ctx, "batches", err)
	}
	out := make([]jobs.Batch, 0, p.Limit)
	for _, id := range ids {
		if len(out) == p.Limit {
			break
		}
		b, err := s.Batch(ctx, p.AccountID, id)
		if errors.Is(err, jobs.ErrNotFound) {
			// Past its retention: forget it from the account's list.
			s.rdb.ZRem(ctx, s.key("batches:"+p.AccountID), id)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// BatchJobs implements [jobs.BatchDriver].
func (s *Store) BatchJobs(ctx context.Context, p jobs.BatchJobsParams) ([]jobs.Job, error) {
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
