package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/store"
)

var _ store.TwoFactor = (*Store)(nil)

// EnableTOTP implements [store.TwoFactor]: one insert; the login's
// primary key refuses a second.
func (s *Store) EnableTOTP(ctx context.Context, t store.TOTP) error {
	if len(t.RecoveryHashes) > store.MaxRecoveryCodes {
		return store.ErrTooManyCodes
	}
	if !validID(t.AccountID) {
		return store.ErrNotFound
	}
	hashes := t.RecoveryHashes
	if hashes == nil {
		hashes = []string{}
	}
	tag, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.totp (login, account_id, secret, recovery, last_step) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (login) DO NOTHING`),
		t.LoginID, t.AccountID, t.Secret, hashes, t.LastStep)
	if isForeignKeyViolation(err) {
		return store.ErrNotFound
	}
	if err == nil && tag.RowsAffected() == 0 {
		return store.ErrTOTPExists
	}
	return fail(ctx, "enable totp", err)
}

// TOTP implements [store.TwoFactor].
func (s *Store) TOTP(ctx context.Context, loginID string) (store.TOTP, error) {
	t := store.TOTP{LoginID: loginID}
	err := s.pool.QueryRow(ctx, s.sql(`SELECT account_id::text, secret, recovery, last_step FROM {schema}.totp WHERE login = $1`),
		loginID).Scan(&t.AccountID, &t.Secret, &t.RecoveryHashes, &t.LastStep)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.TOTP{}, store.ErrNotFound
	}
	if err != nil {
		return store.TOTP{}, fail(ctx, "totp", err)
	}
	return t, nil
}

// DisableTOTP implements [store.TwoFactor].
func (s *Store) DisableTOTP(ctx context.Context, loginID string) error {
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.totp WHERE login = $1`), loginID)
	if err != nil {
		return fail(ctx, "disable totp", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// UseTOTPStep implements [store.TwoFactor]: one conditional update.
func (s *Store) UseTOTPStep(ctx context.Context, loginID string, step int64) (bool, error) {
	var used bool
	err := s.pool.QueryRow(ctx, s.sql(`
		WITH t AS (SELECT login FROM {schema}.totp WHERE login = $1),
		u AS (UPDATE {schema}.totp SET last_step = $2 WHERE login = $1 AND last_step < $2 RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u) FROM t`), loginID, step).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, store.ErrNotFound
	}
	if err != nil {
		return false, fail(ctx, "use totp step", err)
	}
	return used, nil
}

// UseRecoveryCode implements [store.TwoFactor]: one conditional update.
func (s *Store) UseRecoveryCode(ctx context.Context, loginID, hash string) (bool, error) {
	var used bool
	err := s.pool.QueryRow(ctx, s.sql(`
		WITH t AS (SELECT login FROM {schema}.totp WHERE login = $1),
		u AS (UPDATE {schema}.totp SET recovery = array_remove(recovery, $2)
			WHERE login = $1 AND $2 = ANY (recovery) RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u) FROM t`), loginID, hash).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, store.ErrNotFound
	}
	if err != nil {
		return false, fail(ctx, "use recovery code", err)
	}
	return used, nil
}

// SetTeamTOTP implements [store.TwoFactor].
func (s *Store) SetTeamTOTP(ctx context.Context, accountID string, required bool) error {
	if !validID(accountID) {
		return store.ErrNotFound
	}
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.accounts SET require_totp = $2 WHERE id = $1`), accountID, required)
	if err != nil {
		return fail(ctx, "set team totp", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// TeamTOTP implements [store.TwoFactor].
func (s *Store) TeamTOTP(ctx context.Context, accountID string) (bool, error) {
	if !validID(accountID) {
		return false, nil
	}
	var required bool
	err := s.pool.QueryRow(ctx, s.sql(`SELECT require_totp FROM {schema}.accounts WHERE id = $1`), accountID).Scan(&required)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fail(ctx, "team totp", err)
	}
	return required, nil
}
