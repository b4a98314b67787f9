package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

var _ store.Tokens = (*Store)(nil)

// ConfirmAccount implements [store.Accounts]: the account's held grant
// is cleared and written to the ledger in one transaction, the account's
// row locked meanwhile.
func (s *Store) ConfirmAccount(ctx context.Context, id string) (int64, error) {
	if !validID(id) {
		return 0, store.ErrNotFound
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fail(ctx, "confirm account", err)
	}
	defer rollback(tx)
	var held *int64
	err = tx.QueryRow(ctx, s.sql(`SELECT held_credits FROM {schema}.accounts WHERE id = $1 FOR UPDATE`), id).Scan(&held)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, fail(ctx, "confirm account", err)
	}
	if held == nil {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.accounts SET held_credits = NULL WHERE id = $1`), id); err != nil {
		return 0, fail(ctx, "confirm account", err)
	}
	if *held > 0 {
		c := credits.Change{AccountID: id, Delta: *held, Reason: credits.ReasonSignup, Reference: "signup", IdempotencyKey: "signup"}
		if _, _, err := s.applyTx(ctx, tx, c); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fail(ctx, "confirm account: commit", err)
	}
	return *held, nil
}

// CreateToken implements [store.Tokens]: a row of the account_tokens
// table, which Cleanup empties of expired tokens.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if !validID(t.AccountID) {
		return store.ErrNotFound
	}
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.account_tokens (hash, purpose, account_id, expiry) VALUES ($1, $2, $3, $4)`),
		t.Hash, string(t.Purpose), t.AccountID, t.Expiry)
	if isForeignKeyViolation(err) {
		return store.ErrNotFound
	}
	return fail(ctx, "create token", err)
}

// TakeToken implements [store.Tokens]: one DELETE … RETURNING, so that a
// token is used once however many take it at once.
func (s *Store) TakeToken(ctx context.Context, purpose store.TokenPurpose, hash string) (store.Token, error) {
	if len(hash) != 64 {
		return store.Token{}, store.ErrTokenInvalid
	}
	t := store.Token{Hash: hash, Purpose: purpose}
	var live bool
	err := s.pool.QueryRow(ctx, s.sql(`
		DELETE FROM {schema}.account_tokens WHERE hash = $1 AND purpose = $2
		RETURNING account_id::text, expiry, now() < expiry`), hash, string(purpose)).Scan(&t.AccountID, &t.Expiry, &live)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !live {
		return store.Token{}, store.ErrTokenInvalid
	}
	if err != nil {
		return store.Token{}, fail(ctx, "take token", err)
	}
	return t, nil
}
