package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/store"
)

// Sessions is the dashboard's [store.SessionStore] in the sessions table
// of the store's schema, so that every process on the database shares
// them. Expired rows are never found, and [Store.Cleanup] deletes them.
type Sessions struct{ s *Store }

var _ store.SessionStore = (*Sessions)(nil)

// FindCtx implements [store.SessionStore].
func (ss *Sessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var b []byte
	err := ss.s.pool.QueryRow(ctx, ss.s.sql(`SELECT data FROM {schema}.sessions WHERE token = $1 AND now() < expiry`), token).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fail(ctx, "find session", err)
	}
	return b, true, nil
}

// CommitCtx implements [store.SessionStore].
func (ss *Sessions) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	_, err := ss.s.pool.Exec(ctx, ss.s.sql(`
		INSERT INTO {schema}.sessions (token, data, expiry) VALUES ($1, $2, $3)
		ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry`), token, b, expiry)
	return fail(ctx, "commit session", err)
}

// DeleteCtx implements [store.SessionStore].
func (ss *Sessions) DeleteCtx(ctx context.Context, token string) error {
	_, err := ss.s.pool.Exec(ctx, ss.s.sql(`DELETE FROM {schema}.sessions WHERE token = $1`), token)
	return fail(ctx, "delete session", err)
}

// Find implements [store.SessionStore].
func (ss *Sessions) Find(token string) ([]byte, bool, error) {
	return ss.FindCtx(context.Background(), token)
}

// Commit implements [store.SessionStore].
func (ss *Sessions) Commit(token string, b []byte, expiry time.Time) error {
	return ss.CommitCtx(context.Background(), token, b, expiry)
}

// Delete implements [store.SessionStore].
func (ss *Sessions) Delete(token string) error {
	return ss.DeleteCtx(context.Background(), token)
}
