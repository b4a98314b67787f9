package pgstore

import (
	"context"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.StatsDriver = (*jobsDriver)(nil)

// QueueStats implements [jobsdriver.StatsDriver] on the partial indexes of
// available and running jobs.
func (s *jobsDriver) QueueStats(ctx context.Context) (jobtype.QueueStats, error) {
	var st jobtype.QueueStats
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT count(*) FILTER (WHERE state = 'available' AND run_at <= now()),
		       count(*) FILTER (WHERE state = 'available' AND run_at > now()),
		       count(*) FILTER (WHERE state = 'running'),
		       min(created_at)
		FROM {schema}.jobs WHERE state IN ('available', 'running')`)).Scan(&st.Available, &st.Delayed, &st.Running, &oldest)
	if err != nil {
		return jobtype.QueueStats{}, fail(ctx, "queue stats", err)
	}
	if oldest != nil {
		st.OldestActive = *oldest
	}
	return st, nil
}
