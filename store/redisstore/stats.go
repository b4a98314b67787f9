package redisstore

import (
	"context"
	"strconv"

	"github.com/validmail/validmail/jobs"
)

var _ jobs.StatsDriver = (*Store)(nil)

// statsScan bounds the delayed and leased ids read to find the oldest
// active job.
const statsScan = 1000

// QueueStats implements [jobs.StatsDriver]: the sizes of the ready,
// delayed and leases sets, and the creation time of the lowest id among
// them (ids grow with creation). Of the delayed and leased sets only the
// first statsScan ids by score are looked at.
func (s *Store) QueueStats(ctx context.Context) (jobs.QueueStats, error) {
	if err := checkCtx(ctx, "queue stats"); err != nil {
		return jobs.QueueStats{}, err
	}
	pipe := s.rdb.Pipeline()
	ready := pipe.ZCard(ctx, s.key("ready"))
	delayed := pipe.ZCard(ctx, s.key("delayed"))
	leases := pipe.ZCard(ctx, s.key("leases"))
	first := pipe.ZRange(ctx, s.key("ready"), 0, 0)
	dIDs := pipe.ZRange(ctx, s.key("delayed"), 0, statsScan-1)
	lIDs := pipe.ZRange(ctx, s.key("leases"), 0, statsScan-1)
	if _, err := pipe.Exec(ctx); err != nil {
		return jobs.QueueStats{}, s.wrap(ctx, "queue stats", err)
	}
	st := jobs.QueueStats{Available: int(ready.Val()), Delayed: int(delayed.Val()), Running: int(leases.Val())}
	lowest := int64(-1)
	for _, ids := range [][]string{first.Val(), dIDs.Val(), lIDs.Val()} {
		for _, id := range ids {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil && (lowest < 0 || n < lowest) {
				lowest = n
			}
		}
	}
	if lowest < 0 {
		return st, nil
	}
	created, err := s.rdb.HGet(ctx, s.key("job:"+strconv.FormatInt(lowest, 10)), "created").Result()
	if err != nil {
		return st, nil // completed meanwhile
	}
	if t, err := micros(created); err == nil {
		st.OldestActive = t
	}
	return st, nil
}
