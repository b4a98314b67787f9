package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/store"
)

var _ store.Usage = (*Store)(nil)

// AddUsage implements [store.Usage] with one upsert.
func (s *Store) AddUsage(ctx context.Context, accountID string, at time.Time, status string, n int) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.usage AS u (account, month, status, n) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account, month, status) DO UPDATE SET n = u.n + EXCLUDED.n`),
		accountID, store.MonthKey(at), status, n)
	return fail(ctx, "add usage", err)
}

// MonthUsage implements [store.Usage].
func (s *Store) MonthUsage(ctx context.Context, accountID string, at time.Time) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, s.sql(`SELECT status, n FROM {schema}.usage WHERE account = $1 AND month = $2`),
		accountID, store.MonthKey(at))
	if err != nil {
		return nil, fail(ctx, "usage", err)
	}
	out := map[string]int{}
	var status string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		out[status] = n
		return nil
	})
	if err != nil {
		return nil, fail(ctx, "usage", err)
	}
	return out, nil
}
