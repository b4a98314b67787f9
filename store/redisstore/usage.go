package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/validmail/validmail/store"
)

var _ store.Usage = (*Store)(nil)

// usageTTL keeps a month's counts for about 13 months.
const usageTTL = 400 * 24 * time.Hour

// AddUsage implements [store.Usage]: usage:ACCOUNT:MONTH is a hash of
// counts by status.
func (s *Store) AddUsage(ctx context.Context, accountID string, at time.Time, status string, n int) error {
	k := s.acctKey(accountID, "usage:"+accountID+":"+store.MonthKey(at))
	pipe := s.rdb.TxPipeline()
	pipe.HIncrBy(ctx, k, status, int64(n))
	pipe.Expire(ctx, k, usageTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return s.wrap(ctx, "add usage", err)
	}
	return nil
}

// MonthUsage implements [store.Usage].
func (s *Store) MonthUsage(ctx context.Context, accountID string, at time.Time) (map[string]int, error) {
	m, err := s.rdb.HGetAll(ctx, s.acctKey(accountID, "usage:"+accountID+":"+store.MonthKey(at))).Result()
	if err != nil {
		return nil, s.wrap(ctx, "usage", err)
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, ErrBadData
		}
		out[k] = n
	}
	return out, nil
}
