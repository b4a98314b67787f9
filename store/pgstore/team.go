package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/store"
)

var (
	_ store.Team     = (*Store)(nil)
	_ store.AuditLog = (*Store)(nil)
)

// Invite implements [store.Team]: one insert, after the expired
// invitations are deleted.
func (s *Store) Invite(ctx context.Context, inv store.Invitation) error {
	if err := store.CheckRole(inv.Role); err != nil {
		return err
	}
	if !validID(inv.AccountID) {
		return store.ErrNotFound
	}
	if _, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.member_invitations WHERE expiry < now()`)); err != nil {
		return fail(ctx, "invite", err)
	}
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.member_invitations (hash, account_id, email, role, expiry) VALUES ($1, $2, $3, $4, $5)`),
		inv.Hash, inv.AccountID, inv.Email, string(inv.Role), inv.Expiry)
	if isForeignKeyViolation(err) {
		return store.ErrNotFound
	}
	return fail(ctx, "invite", err)
}

// AcceptInvitation implements [store.Team]: one transaction deletes the
// invitation, locks its account's row (so that two accepts count the
// members one after the other) and inserts the member; an email taken by
// another account meanwhile rolls it back, and the invitation is then
// deleted on its own.
func (s *Store) AcceptInvitation(ctx context.Context, hash, passwordHash string) (store.Member, error) {
	if len(hash) != 64 {
		return store.Member{}, store.ErrTokenInvalid
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return store.Member{}, fail(ctx, "accept invitation", err)
	}
	defer rollback(tx)
	var inv store.Invitation
	var role string
	var live bool
	err = tx.QueryRow(ctx, s.sql(`
		DELETE FROM {schema}.member_invitations WHERE hash = $1
		RETURNING account_id::text, email, role, now() < expiry`), hash).Scan(&inv.AccountID, &inv.Email, &role, &live)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Member{}, store.ErrTokenInvalid
	}
	if err != nil {
		return store.Member{}, fail(ctx, "accept invitation", err)
	}
	used := func(e error) (store.Member, error) {
		if err := tx.Commit(ctx); err != nil {
			return store.Member{}, fail(ctx, "accept invitation", err)
		}
		return store.Member{}, e
	}
	if !live {
		return used(store.ErrTokenInvalid)
	}
	var n int
	err = tx.QueryRow(ctx, s.sql(`
		SELECT count(m.id) FROM (SELECT id FROM {schema}.accounts WHERE id = $1 FOR UPDATE) a
		LEFT JOIN {schema}.members m ON m.account_id = a.id GROUP BY a.id`), inv.AccountID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return used(store.ErrTokenInvalid)
	}
	if err != nil {
		return store.Member{}, fail(ctx, "accept invitation", err)
	}
	if n >= store.MaxMembers {
		return used(store.ErrTeamFull)
	}
	norm := store.NormalizeEmail(inv.Email)
	var taken bool
	if err := tx.QueryRow(ctx, s.sql(`SELECT EXISTS (SELECT 1 FROM {schema}.members WHERE email_norm = $1)`), norm).Scan(&taken); err != nil {
		return store.Member{}, fail(ctx, "accept invitation", err)
	}
	if taken {
		return used(store.ErrEmailTaken)
	}
	m := store.Member{ID: uuid.NewString(), AccountID: inv.AccountID, Email: inv.Email, Role: store.Role(role), PasswordHash: passwordHash}
	err = tx.QueryRow(ctx, s.sql(`
		INSERT INTO {schema}.members (id, account_id, email, email_norm, role, password) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING created_at`), m.ID, m.AccountID, m.Email, norm, role, passwordHash).Scan(&m.CreatedAt)
	if isUniqueViolation(err, "members_email_norm_key") {
		rollback(tx)
		if _, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.member_invitations WHERE hash = $1`), hash); err != nil {
			return store.Member{}, fail(ctx, "accept invitation", err)
		}
		return store.Member{}, store.ErrEmailTaken
	}
	if err != nil {
		return store.Member{}, fail(ctx, "accept invitation", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return store.Member{}, fail(ctx, "accept invitation", err)
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

const memberColumns = `id::text, account_id::text, email, role, password, created_at`

func scanMember(row pgx.Row) (store.Member, error) {
	var m store.Member
	var role string
	err := row.Scan(&m.ID, &m.AccountID, &m.Email, &role, &m.PasswordHash, &m.CreatedAt)
	m.Role = store.Role(role)
	m.CreatedAt = m.CreatedAt.UTC()
	return m, err
}

// Member implements [store.Team].
func (s *Store) Member(ctx context.Context, accountID, memberID string) (store.Member, error) {
	if !validID(accountID) || !validID(memberID) {
		return store.Member{}, store.ErrNotFound
	}
	m, err := scanMember(s.pool.QueryRow(ctx, s.sql(`SELECT `+memberColumns+` FROM {schema}.members WHERE id = $1 AND account_id = $2`), memberID, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Member{}, store.ErrNotFound
	}
	return m, fail(ctx, "member", err)
}

// MemberByEmail implements [store.Team].
func (s *Store) MemberByEmail(ctx context.Context, email string) (store.Member, error) {
	m, err := scanMember(s.pool.QueryRow(ctx, s.sql(`SELECT `+memberColumns+` FROM {schema}.members WHERE email_norm = $1`), store.NormalizeEmail(email)))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Member{}, store.ErrNotFound
	}
	return m, fail(ctx, "member by email", err)
}

// Members implements [store.Team].
func (s *Store) Members(ctx context.Context, accountID string) ([]store.Member, error) {
	if !validID(accountID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+memberColumns+` FROM {schema}.members WHERE account_id = $1 ORDER BY created_at, id`), accountID)
	if err != nil {
		return nil, fail(ctx, "members", err)
	}
	defer rows.Close()
	var out []store.Member
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, fail(ctx, "members", err)
		}
		out = append(out, m)
	}
	return out, fail(ctx, "members", rows.Err())
}

// RemoveMember implements [store.Team].
func (s *Store) RemoveMember(ctx context.Context, accountID, memberID string) error {
	if !validID(accountID) || !validID(memberID) {
		return store.ErrNotFound
	}
	// One statement removes the member and the account's invitations of
	// its address (store.NormalizeEmail is lower-casing).
	var removed bool
	err := s.pool.QueryRow(ctx, s.sql(`
		WITH m AS (DELETE FROM {schema}.members WHERE id = $1 AND account_id = $2 RETURNING email_norm),
		i AS (DELETE FROM {schema}.member_invitations WHERE account_id = $2 AND lower(email) IN (SELECT email_norm FROM m))
		SELECT EXISTS (SELECT 1 FROM m)`), memberID, accountID).Scan(&removed)
	if err != nil {
		return fail(ctx, "remove member", err)
	}
	if !removed {
		return store.ErrNotFound
	}
	return nil
}

// Invitations implements [store.Team].
func (s *Store) Invitations(ctx context.Context, accountID string) ([]store.Invitation, error) {
	if !validID(accountID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT hash, account_id::text, email, role, expiry FROM {schema}.member_invitations
		WHERE account_id = $1 AND expiry > now() ORDER BY expiry, hash`), accountID)
	if err != nil {
		return nil, fail(ctx, "invitations", err)
	}
	out, err := pgx.CollectRows(rows, scanInvitation)
	if err != nil {
		return nil, fail(ctx, "invitations", err)
	}
	return out, nil
}

func scanInvitation(row pgx.CollectableRow) (store.Invitation, error) {
	var inv store.Invitation
	var role string
	err := row.Scan(&inv.Hash, &inv.AccountID, &inv.Email, &role, &inv.Expiry)
	inv.Role = store.Role(role)
	return inv, err
}

// Invitation implements [store.Team].
func (s *Store) Invitation(ctx context.Context, hash string) (store.Invitation, error) {
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT hash, account_id::text, email, role, expiry FROM {schema}.member_invitations
		WHERE hash = $1 AND expiry > now()`), hash)
	if err != nil {
		return store.Invitation{}, fail(ctx, "invitation", err)
	}
	inv, err := pgx.CollectExactlyOneRow(rows, scanInvitation)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Invitation{}, store.ErrTokenInvalid
	}
	if err != nil {
		return store.Invitation{}, fail(ctx, "invitation", err)
	}
	return inv, nil
}

// RevokeInvitation implements [store.Team].
func (s *Store) RevokeInvitation(ctx context.Context, accountID, hash string) error {
	if !validID(accountID) {
		return store.ErrNotFound
	}
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.member_invitations WHERE hash = $1 AND account_id = $2`), hash, accountID)
	if err != nil {
		return fail(ctx, "revoke invitation", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// AddAudit implements [store.AuditLog]: the insert and the removal of
// what falls beyond the bound, in one transaction.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	e = store.CutAudit(e)
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(ctx, "add audit", err)
	}
	defer rollback(tx)
	if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.audit_log (account, at, actor, action, detail) VALUES ($1, $2, $3, $4, $5)`),
		e.AccountID, e.Time, e.Actor, e.Action, e.Detail); err != nil {
		return fail(ctx, "add audit", err)
	}
	if _, err := tx.Exec(ctx, s.sql(`
		DELETE FROM {schema}.audit_log WHERE account = $1 AND seq <= (
			SELECT seq FROM {schema}.audit_log WHERE account = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`),
		e.AccountID, store.MaxAuditEntries); err != nil {
		return fail(ctx, "add audit", err)
	}
	return fail(ctx, "add audit", tx.Commit(ctx))
}

// Audit implements [store.AuditLog].
func (s *Store) Audit(ctx context.Context, accountID string, offset, limit int) ([]store.AuditEntry, error) {
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT at, actor, action, detail FROM {schema}.audit_log WHERE account = $1
		ORDER BY seq DESC OFFSET $2 LIMIT $3`), accountID, max(offset, 0), max(limit, 0))
	if err != nil {
		return nil, fail(ctx, "audit", err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		e := store.AuditEntry{AccountID: accountID}
		if err := rows.Scan(&e.Time, &e.Actor, &e.Action, &e.Detail); err != nil {
			return nil, fail(ctx, "audit", err)
		}
		e.Time = e.Time.UTC()
		out = append(out, e)
	}
	return out, fail(ctx, "audit", rows.Err())
}
