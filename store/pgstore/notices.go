package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/store"
)

var _ store.Notices = (*Store)(nil)

// SetFinishMail implements [store.Notices]: a column of the account.
func (s *Store) SetFinishMail(ctx context.Context, accountID string, on bool) error {
	if !validID(accountID) {
		return store.ErrNotFound
	}
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.accounts SET finish_mail = $2 WHERE id = $1`), accountID, on)
	if err != nil {
		return fail(ctx, "set finish mail", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// FinishMail implements [store.Notices].
func (s *Store) FinishMail(ctx context.Context, accountID string) (bool, error) {
	if !validID(accountID) {
		return false, store.ErrNotFound
	}
	var on bool
	err := s.pool.QueryRow(ctx, s.sql(`SELECT finish_mail FROM {schema}.accounts WHERE id = $1`), accountID).Scan(&on)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, store.ErrNotFound
	}
	if err != nil {
		return false, fail(ctx, "finish mail", err)
	}
	return on, nil
}

// AddNotice implements [store.Notices]: an insert that a batch's
// existing notice, pending or done, turns into nothing.
func (s *Store) AddNotice(ctx context.Context, accountID, batchID string) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.batch_notices (batch, account, due) VALUES ($1, $2, now())
		ON CONFLICT (batch) DO NOTHING`), batchID, accountID)
	if err != nil {
		return fail(ctx, "add notice", err)
	}
	return nil
}

// ClaimNotices implements [store.Notices]: one statement takes the due
// rows FOR UPDATE SKIP LOCKED, so that two instances never claim one
// notice; the done notices past their keep are deleted beside it.
func (s *Store) ClaimNotices(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Notice, error) {
	if limit <= 0 {
		return nil, nil
	}
	if _, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.batch_notices WHERE done AND due < $1`), now); err != nil {
		return nil, fail(ctx, "claim notices", err)
	}
	rows, err := s.pool.Query(ctx, s.sql(`
		WITH due AS (
			SELECT batch FROM {schema}.batch_notices
			WHERE NOT done AND due <= $1
			ORDER BY due LIMIT $3
			FOR UPDATE SKIP LOCKED
		)
		UPDATE {schema}.batch_notices n
		SET due = $1 + $2::float8 * interval '1 millisecond',
		    attempts = n.attempts + CASE WHEN n.token = '' THEN 0 ELSE 1 END,
		    token = $4 || n.batch
		FROM due WHERE n.batch = due.batch
		RETURNING n.account, n.batch, n.token, n.attempts`), now, float64(lease.Milliseconds()), limit, uuid.NewString()+":")
	if err != nil {
		return nil, fail(ctx, "claim notices", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Notice, error) {
		var n store.Notice
		err := r.Scan(&n.AccountID, &n.BatchID, &n.Token, &n.Attempts)
		return n, err
	})
	if err != nil {
		return nil, fail(ctx, "claim notices", err)
	}
	return out, nil
}

// DoneNotice implements [store.Notices]: a compare-and-set on the claim's
// token.
func (s *Store) DoneNotice(ctx context.Context, n store.Notice) error {
	tag, err := s.pool.Exec(ctx, s.sql(`
		UPDATE {schema}.batch_notices SET done = true, token = '', due = now() + $3::float8 * interval '1 millisecond'
		WHERE batch = $1 AND token = $2 AND token <> '' AND NOT done`), n.BatchID, n.Token, float64(store.NoticeKeep.Milliseconds()))
	if err != nil {
		return fail(ctx, "notice done", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNoticeLost
	}
	return nil
}

// DelayNotice implements [store.Notices]: a compare-and-set on the
// claim's token.
func (s *Store) DelayNotice(ctx context.Context, n store.Notice, due time.Time) error {
	tag, err := s.pool.Exec(ctx, s.sql(`
		UPDATE {schema}.batch_notices SET token = '', due = $3, attempts = attempts + 1
		WHERE batch = $1 AND token = $2 AND token <> '' AND NOT done`), n.BatchID, n.Token, due)
	if err != nil {
		return fail(ctx, "delay notice", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNoticeLost
	}
	return nil
}
