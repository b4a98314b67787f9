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
// them; rows are keyed by the hash of the token and indexed by account.
// Expired rows are never found, and Cleanup deletes them.
type Sessions struct{ s *Store }

var _ store.SessionStore = (*Sessions)(nil)

// FindSession implements [store.SessionStore].
func (ss *Sessions) FindSession(ctx context.Context, id string) ([]byte, bool, error) {
	if len(id) != 64 {
		return nil, false, nil
	}
	var b []byte
	err := ss.s.pool.QueryRow(ctx, ss.s.sql(`SELECT data FROM {schema}.sessions WHERE id = $1 AND now() < expiry`), id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fail(ctx, "find session", err)
	}
	return b, true, nil
}

// SaveSession implements [store.SessionStore].
func (ss *Sessions) SaveSession(ctx context.Context, s store.Session) error {
	if !time.Now().Before(s.Expiry) {
		return ss.DeleteSession(ctx, s.ID)
	}
	_, err := ss.s.pool.Exec(ctx, ss.s.sql(`
		INSERT INTO {schema}.sessions (id, account, data, expiry) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET account = EXCLUDED.account, data = EXCLUDED.data, expiry = EXCLUDED.expiry`),
		s.ID, s.AccountID, s.Data, s.Expiry)
	return fail(ctx, "save session", err)
}

// UpdateSession implements [store.SessionStore]: an UPDATE, which
// finds no row once the session has ended.
func (ss *Sessions) UpdateSession(ctx context.Context, s store.Session) error {
	if !time.Now().Before(s.Expiry) {
		return ss.DeleteSession(ctx, s.ID)
	}
	_, err := ss.s.pool.Exec(ctx, ss.s.sql(`
		UPDATE {schema}.sessions SET account = $2, data = $3, expiry = $4 WHERE id = $1 AND now() < expiry`),
		s.ID, s.AccountID, s.Data, s.Expiry)
	return fail(ctx, "update session", err)
}

// DeleteSession implements [store.SessionStore].
func (ss *Sessions) DeleteSession(ctx context.Context, id string) error {
	_, err := ss.s.pool.Exec(ctx, ss.s.sql(`DELETE FROM {schema}.sessions WHERE id = $1`), id)
	return fail(ctx, "delete session", err)
}

// DeleteAccountSessions implements [store.SessionStore]: one statement
// over the account's index.
func (ss *Sessions) DeleteAccountSessions(ctx context.Context, accountID, keepID string) error {
	if accountID == "" {
		return nil
	}
	_, err := ss.s.pool.Exec(ctx, ss.s.sql(`DELETE FROM {schema}.sessions WHERE account = $1 AND account <> '' AND id <> $2`), accountID, keepID)
	return fail(ctx, "delete account sessions", err)
}
