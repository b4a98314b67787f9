package pgstore

import (
	"context"
	"time"

	"github.com/validmail/validmail/jobs"
)

var _ jobs.StatsDriver = (*Store)(nil)

// QueueStats implements [jobs.StatsDriver] on the partial indexes of
// available and running jobs.
func (s *Store) QueueStats(ctx context.Context) (jobs.QueueStats, error) {
	var st jobs.QueueStats
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT count(*) FILTER (WHERE state = 'available' AND run_at <= now()),
		       count(*) FILTER (WHERE state = 'available' AND run_at > now()),
		       count(*) FILTER (WHERE state = 'running'),
		       min(created_at)
		FROM {schema}.jobs WHERE state IN ('available', 'running')`)).Scan(&st.Available, &st.Delayed, &st.Running, &oldest)
	if err != nil {
		return jobs.QueueStats{}, fail(ctx, "queue stats", err)
	}
	if oldest != nil {
		st.OldestActive = *oldest
	}
	return st, nil
}
