package memstore

import (
	"context"
	"maps"
	"time"

	"github.com/validmail/validmail/store"
)

var _ store.Usage = (*Store)(nil)

// AddUsage implements [store.Usage].
func (s *Store) AddUsage(ctx context.Context, accountID string, at time.Time, status string, n int) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := accountID + " " + store.MonthKey(at)
	m := s.usage[k]
	if m == nil {
		m = map[string]int{}
		s.usage[k] = m
	}
	m[status] += n
	return nil
}

// MonthUsage implements [store.Usage].
func (s *Store) MonthUsage(ctx context.Context, accountID string, at time.Time) (map[string]int, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.usage[accountID+" "+store.MonthKey(at)])
	if out == nil {
		out = map[string]int{}
	}
	return out, nil
}
