package redisstore

import (
	"context"
	"github.com/redis/go-redis/v9"
	"strconv"

	"github.com/validmail/validmail/jobs"
)

var _ jobs.StatsDriver = (*Store)(nil)

// statsScan bounds the delayed and leased ids read to find the oldest
// active job.
const statsScan = 1000

// QueueStats implements [jobs.StatsDriver]: the sizes of the ready,
// delayed and leases sets of every shard, and the earliest creation time
// of each shard's lowest id among them (ids grow with creation within a
// shard). Of the delayed and leased sets only the first statsScan ids by
// score are looked at.
func (s *Store) QueueStats(ctx context.Context) (jobs.QueueStats, error) {
	if err := checkCtx(ctx, "queue stats"); err != nil {
		return jobs.QueueStats{}, err
	}
	type shardCmds struct {
		ready, delayed, leases *redis.IntCmd
		first, dIDs, lIDs      *redis.StringSliceCmd
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]shardCmds, shardCount)
	for k := range cmds {
		b := s.shardBase(k)
		cmds[k] = shardCmds{
			ready:   pipe.ZCard(ctx, b+"ready"),
			delayed: pipe.ZCard(ctx, b+"delayed"),
			leases:  pipe.ZCard(ctx, b+"leases"),
			first:   pipe.ZRange(ctx, b+"ready", 0, 0),
			dIDs:    pipe.ZRange(ctx, b+"delayed", 0, statsScan-1),
			lIDs:    pipe.ZRange(ctx, b+"leases", 0, statsScan-1),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return jobs.QueueStats{}, s.wrap(ctx, "queue stats", err)
	}
	var st jobs.QueueStats
	pipe = s.rdb.Pipeline()
	var created []*redis.StringCmd
	for k, c := range cmds {
		st.Available += int(c.ready.Val())
		st.Delayed += int(c.delayed.Val())
		st.Running += int(c.leases.Val())
		lowest := int64(-1)
		for _, ids := range [][]string{c.first.Val(), c.dIDs.Val(), c.lIDs.Val()} {
			for _, id := range ids {
				if n, err := strconv.ParseInt(id, 10, 64); err == nil && (lowest < 0 || n < lowest) {
					lowest = n
				}
			}
		}
		if lowest >= 0 {
			created = append(created, pipe.HGet(ctx, s.shardBase(k)+"job:"+strconv.FormatInt(lowest, 10), "created"))
		}
	}
	if len(created) == 0 {
		return st, nil
	}
	pipe.Exec(ctx) // a job completed meanwhile has no answer: skipped
	for _, c := range created {
		if c.Err() != nil {
			continue
		}
		if t, err := micros(c.Val()); err == nil && (st.OldestActive.IsZero() || t.Before(st.OldestActive)) {
			st.OldestActive = t
		}
	}
	return st, nil
}
