package memstore

import (
	"context"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.StatsDriver = (*jobsDriver)(nil)

// QueueStats implements [jobsdriver.StatsDriver]: one pass over the jobs not
// yet completed.
func (s *jobsDriver) QueueStats(ctx context.Context) (jobtype.QueueStats, error) {
	if err := ctxErr(ctx); err != nil {
		return jobtype.QueueStats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var st jobtype.QueueStats
	now := time.Now()
	for _, j := range s.jobs {
		switch j.state {
		case completed:
			continue
		case running:
			st.Running++
		default:
			if j.runAt.After(now) {
				st.Delayed++
			} else {
				st.Available++
			}
		}
		if st.OldestActive.IsZero() || j.CreatedAt.Before(st.OldestActive) {
			st.OldestActive = j.CreatedAt
		}
	}
	return st, nil
}
