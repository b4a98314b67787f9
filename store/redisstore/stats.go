package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.StatsDriver = (*jobsDriver)(nil)

// statsScan bounds the delayed and leased ids read to find the oldest
// active job.
const statsScan = 1000

// QueueStats implements [jobsdriver.StatsDriver]: the sizes of the ready,
// delayed and leases sets of every shard, and the earliest creation time
// of each shard's lowest id among them (ids grow with creation within a
// shard). Of the delayed and leased sets only the first statsScan ids by
// score are looked at.
func (s *jobsDriver) QueueStats(ctx context.Context) (jobtype.QueueStats, error) {
	if err := checkCtx(ctx, "queue stats"); err != nil {
		return jobtype.QueueStats{}, err
	}
	type shardCmds struct {
		delayed, leases *redis.IntCmd
		ready           *redis.Cmd
		dIDs, lIDs      *redis.StringSliceCmd
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]shardCmds, shardCount)
	for k := range cmds {
		b := s.shardBase(k)
		cmds[k] = shardCmds{
			ready:   scriptReadyStats.Eval(ctx, pipe, []string{b + "accts", b + "ready"}, b),
			delayed: pipe.ZCard(ctx, b+"delayed"),
			leases:  pipe.ZCard(ctx, b+"leases"),
			dIDs:    pipe.ZRange(ctx, b+"delayed", 0, statsScan-1),
			lIDs:    pipe.ZRange(ctx, b+"leases", 0, statsScan-1),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return jobtype.QueueStats{}, s.wrap(ctx, "queue stats", err)
	}
	var st jobtype.QueueStats
	pipe = s.rdb.Pipeline()
	var created []*redis.StringCmd
	for k, c := range cmds {
		ready, err := c.ready.Int64Slice()
		if err != nil || len(ready) != 2 {
			return jobtype.QueueStats{}, fmt.Errorf("%w: ready jobs' stats %v (%v)", ErrBadData, ready, err)
		}
		st.Available += int(ready[0])
		first := []string{}
		if ready[1] > 0 {
			first = append(first, strconv.FormatInt(ready[1], 10))
		}
		st.Delayed += int(c.delayed.Val())
		st.Running += int(c.leases.Val())
		lowest := int64(-1)
		for _, ids := range [][]string{first, c.dIDs.Val(), c.lIDs.Val()} {
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

// scriptReadyStats counts a shard's ready jobs, in its accounts' queues
// and the older layout's ready set, and finds the lowest id among them.
// KEYS: accts, ready. ARGV: shard base. Returns {count, lowest id (0 for
// none)}.
var scriptReadyStats = script(`
local n = redis.call('ZCARD', KEYS[2])
local lowest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
lowest = lowest and tonumber(lowest) or 0
for _, a in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local rq = ARGV[1] .. 'rq:' .. a
  n = n + redis.call('ZCARD', rq)
  local first = redis.call('ZRANGE', rq, 0, 0)[1]
  if first and (lowest == 0 or tonumber(first) < lowest) then lowest = tonumber(first) end
end
return {n, lowest}
`)
