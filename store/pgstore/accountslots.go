package pgstore

import (
	"context"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

var _ jobsdriver.AccountSlots = (*Store)(nil)

// AcquireSlot implements [jobsdriver.AccountSlots]: one call of
// account_slot_acquire, which takes the account's advisory lock.
func (s *Store) AcquireSlot(ctx context.Context, account, holder string, limit int, ttl time.Duration) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, s.sql(`SELECT {schema}.account_slot_acquire($1, $2, $3, $4)`), account, holder, limit, ttl).Scan(&ok)
	if err != nil {
		return false, fail(ctx, "acquire slot", err)
	}
	return ok, nil
}

// ReleaseSlot implements [jobsdriver.AccountSlots].
func (s *Store) ReleaseSlot(ctx context.Context, account, holder string) error {
	_, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.account_slots WHERE account = $1 AND holder = $2`), account, holder)
	return fail(ctx, "release slot", err)
}
