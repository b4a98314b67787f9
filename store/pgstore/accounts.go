package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
)

// CreateAccount implements [store.Accounts]: the account and its signup
// grant are one transaction.
func (s *Store) CreateAccount(ctx context.Context, p store.CreateAccountParams) (store.Account, error) {
	if p.Email == "" {
		return store.Account{}, store.ErrInvalidEmail
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return store.Account{}, fail(ctx, "create account", err)
	}
	defer rollback(tx)
	a := store.Account{ID: uuid.NewString(), Email: p.Email, Plan: p.PlanOrDefault()}
	var hash *string
	if p.PasswordHash != "" {
		hash = &p.PasswordHash
	}
	var held *int64
	if p.Unconfirmed {
		n := p.Credits()
		held, a.Unconfirmed = &n, true
	}
	err = tx.QueryRow(ctx, s.sql(`
		INSERT INTO {schema}.accounts (id, email, email_norm, plan, password_hash, held_credits) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING created_at`), a.ID, a.Email, store.NormalizeEmail(a.Email), a.Plan, hash, held).Scan(&a.CreatedAt)
	if isUniqueViolation(err, "accounts_email_norm_key") {
		return store.Account{}, store.ErrEmailTaken
	}
	if err != nil {
		return store.Account{}, fail(ctx, "create account", err)
	}
	if n := p.Credits(); n > 0 && !p.Unconfirmed {
		c := credits.Change{AccountID: a.ID, Delta: n, Reason: credits.ReasonSignup, Reference: "signup", IdempotencyKey: "signup"}
		if _, _, err := s.applyTx(ctx, tx, c); err != nil {
			return store.Account{}, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return store.Account{}, fail(ctx, "create account: commit", err)
	}
	return a, nil
}

// PasswordHash implements [store.Passwords].
func (s *Store) PasswordHash(ctx context.Context, accountID string) (string, error) {
	if !validID(accountID) {
		return "", store.ErrNotFound
	}
	var hash *string
	err := s.pool.QueryRow(ctx, s.sql(`SELECT password_hash FROM {schema}.accounts WHERE id = $1`), accountID).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", store.ErrNotFound
	}
	if err != nil {
		return "", fail(ctx, "password hash", err)
	}
	if hash == nil {
		return "", nil
	}
	return *hash, nil
}

// SetPasswordHash implements [store.Passwords].
func (s *Store) SetPasswordHash(ctx context.Context, accountID, hash string) error {
	if !validID(accountID) {
		return store.ErrNotFound
	}
	var h *string
	if hash != "" {
		h = &hash
	}
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.accounts SET password_hash = $2 WHERE id = $1`), accountID, h)
	if err != nil {
		return fail(ctx, "set password hash", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// GetAccount implements [store.Accounts].
func (s *Store) GetAccount(ctx context.Context, id string) (store.Account, error) {
	if !validID(id) {
		return store.Account{}, store.ErrNotFound
	}
	return s.getAccount(ctx, `id = $1`, id)
}

// GetAccountByEmail implements [store.Accounts].
func (s *Store) GetAccountByEmail(ctx context.Context, email string) (store.Account, error) {
	return s.getAccount(ctx, `email_norm = $1`, store.NormalizeEmail(email))
}

func (s *Store) getAccount(ctx context.Context, where string, arg string) (store.Account, error) {
	var a store.Account
	err := s.pool.QueryRow(ctx, s.sql(`SELECT id::text, email, plan, created_at, held_credits IS NOT NULL FROM {schema}.accounts WHERE `+where), arg).
		Scan(&a.ID, &a.Email, &a.Plan, &a.CreatedAt, &a.Unconfirmed)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Account{}, store.ErrNotFound
	}
	if err != nil {
		return store.Account{}, fail(ctx, "get account", err)
	}
	return a, nil
}

// keyColumns are the columns scanKey reads, in order.
const keyColumns = `id::text, account_id::text, name, prefix, encode(hash, 'hex'), permissions, created_at, last_used_at, revoked_at`

func scanKey(row pgx.Row) (store.Key, error) {
	var k store.Key
	var perms []string
	var used, revoked *time.Time
	if err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.Prefix, &k.Hash, &perms, &k.CreatedAt, &used, &revoked); err != nil {
		return store.Key{}, err
	}
	k.Permissions = make([]store.Permission, len(perms))
	for i, p := range perms {
		k.Permissions[i] = store.Permission(p)
	}
	if used != nil {
		k.LastUsedAt = *used
	}
	if revoked != nil {
		k.RevokedAt = *revoked
	}
	return k, nil
}

// CreateKey implements [store.Accounts]. Only the SHA-256 of the secret and
// its display prefix reach the database. With a bound on active keys, the
// account's row is locked for the transaction, so the count and the insert
// of concurrent calls, in any process, take turns.
func (s *Store) CreateKey(ctx context.Context, p store.CreateKeyParams) (store.Key, string, error) {
	secret, hash, prefix, perms, err := store.NewKeyMaterial(p)
	if err != nil {
		return store.Key{}, "", err
	}
	if !validID(p.AccountID) {
		return store.Key{}, "", store.ErrNotFound
	}
	sum, err := hex.DecodeString(hash)
	if err != nil {
		return store.Key{}, "", err
	}
	names := make([]string, len(perms))
	for i, p := range perms {
		names[i] = string(p)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return store.Key{}, "", fail(ctx, "create key", err)
	}
	defer rollback(tx)
	if p.MaxActive > 0 {
		// FOR NO KEY UPDATE serializes key creations of the account without
		// blocking the inserts elsewhere that only reference the account.
		// The count is a statement of its own: under READ COMMITTED its
		// snapshot is taken once the lock is held, so it sees the keys of
		// the transaction that held the lock before.
		err := tx.QueryRow(ctx, s.sql(`SELECT 1 FROM {schema}.accounts WHERE id = $1 FOR NO KEY UPDATE`), p.AccountID).Scan(new(int))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Key{}, "", store.ErrNotFound
		}
		if err != nil {
			return store.Key{}, "", fail(ctx, "create key", err)
		}
		var active int
		err = tx.QueryRow(ctx, s.sql(`
			SELECT count(*) FROM {schema}.api_keys WHERE account_id = $1 AND revoked_at IS NULL`), p.AccountID).Scan(&active)
		if err != nil {
			return store.Key{}, "", fail(ctx, "create key", err)
		}
		if active >= p.MaxActive {
			return store.Key{}, "", store.ErrKeyLimit
		}
	}
	k, err := scanKey(tx.QueryRow(ctx, s.sql(`
		INSERT INTO {schema}.api_keys (id, account_id, name, prefix, hash, permissions)
		VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING `+keyColumns), uuid.NewString(), p.AccountID, p.Name, prefix, sum, names))
	switch {
	case isUniqueViolation(err, "api_keys_hash_key"):
		return store.Key{}, "", store.ErrKeyExists
	case isForeignKeyViolation(err):
		return store.Key{}, "", store.ErrNotFound
	case err != nil:
		return store.Key{}, "", fail(ctx, "create key", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return store.Key{}, "", fail(ctx, "create key: commit", err)
	}
	return k, secret, nil
}

// ListKeys implements [store.Accounts].
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	if !validID(accountID) {
		return []store.Key{}, nil
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+keyColumns+` FROM {schema}.api_keys WHERE account_id = $1 ORDER BY seq`), accountID)
	if err != nil {
		return nil, fail(ctx, "list keys", err)
	}
	defer rows.Close()
	out := []store.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fail(ctx, "list keys", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, "list keys", err)
	}
	return out, nil
}

// RevokeKey implements [store.Accounts]. The first revocation time is kept.
func (s *Store) RevokeKey(ctx context.Context, accountID, keyID string) error {
	if !validID(accountID) || !validID(keyID) {
		return store.ErrNotFound
	}
	tag, err := s.pool.Exec(ctx, s.sql(`
		UPDATE {schema}.api_keys SET revoked_at = coalesce(revoked_at, now())
		WHERE id = $1 AND account_id = $2`), keyID, accountID)
	if err != nil {
		return fail(ctx, "revoke key", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// Authenticate implements [store.Accounts]: a lookup by the secret's hash.
// LastUsedAt is written at most once a minute per key, which keeps the
// write load of busy keys low.
func (s *Store) Authenticate(ctx context.Context, secret string) (store.Key, error) {
	if store.CheckSecret(secret) != nil {
		return store.Key{}, store.ErrInvalidKey
	}
	sum, err := hex.DecodeString(store.HashSecret(secret))
	if err != nil {
		return store.Key{}, err
	}
	k, err := scanKey(s.pool.QueryRow(ctx, s.sql(`
		WITH used AS (
			UPDATE {schema}.api_keys SET last_used_at = now()
			WHERE hash = $1 AND revoked_at IS NULL
			  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
			RETURNING id, last_used_at
		)
		SELECT k.id::text, k.account_id::text, k.name, k.prefix, encode(k.hash, 'hex'), k.permissions,
		       k.created_at, coalesce(u.last_used_at, k.last_used_at), k.revoked_at
		FROM {schema}.api_keys k LEFT JOIN used u ON u.id = k.id
		WHERE k.hash = $1`), sum))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Key{}, store.ErrInvalidKey
	}
	if err != nil {
		return store.Key{}, fail(ctx, "authenticate", err)
	}
	if k.Revoked() {
		return store.Key{}, store.ErrInvalidKey
	}
	return k, nil
}

// validID reports whether id is a UUID in the canonical form the store
// hands out; any other string names no account or key.
func validID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// SetPlan implements [store.PlanSetter]: one update of the account's row.
func (s *Store) SetPlan(ctx context.Context, id, plan string) error {
	if err := store.CheckPlan(plan); err != nil {
		return err
	}
	if !validID(id) {
		return store.ErrNotFound
	}
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.accounts SET plan = $2 WHERE id = $1`), id, plan)
	if err != nil {
		return fail(ctx, "set plan", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}
