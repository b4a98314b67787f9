package store

import (
	"context"
	"time"
)

// SessionStore keeps the dashboard's sessions: opaque data under a random
// token until an expiry. Its method set is that of
// github.com/alexedwards/scs/v2's CtxStore, so a SessionStore plugs into an
// scs session manager as it is.
//
// Find of an unknown or expired token reports found false and no error;
// Delete of an unknown token is not an error. Like every backend
// interface, a SessionStore may be called concurrently from several
// processes sharing the backend.
type SessionStore interface {
	Find(token string) (b []byte, found bool, err error)
	Commit(token string, b []byte, expiry time.Time) error
	Delete(token string) error
	FindCtx(ctx context.Context, token string) (b []byte, found bool, err error)
	CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error
	DeleteCtx(ctx context.Context, token string) error
}

// Passwords keeps the hash of each account's dashboard password. The
// hash is opaque to the backend (the dashboard writes PHC strings such as
// "$argon2id$v=19$m=…"); the password itself is never stored.
type Passwords interface {
	// PasswordHash returns the account's password hash: "" when it has
	// none, [ErrNotFound] for an unknown account.
	PasswordHash(ctx context.Context, accountID string) (string, error)
	// SetPasswordHash replaces the account's password hash ("" removes
	// it), or returns [ErrNotFound] for an unknown account.
	SetPasswordHash(ctx context.Context, accountID, hash string) error
}

// Usage counts each account's validations by calendar month (UTC) and
// status, for the console's overview and GET /api/v1/account. Counts are
// kept beside the work, not in its transaction: a crash between a
// validation and its count loses the count, never a credit.
type Usage interface {
	// AddUsage adds n validations with the status to the account's month
	// of at.
	AddUsage(ctx context.Context, accountID string, at time.Time, status string, n int) error
	// MonthUsage returns the account's counts by status for the month of
	// at; an account without any has an empty map.
	MonthUsage(ctx context.Context, accountID string, at time.Time) (map[string]int, error)
}

// MonthKey is the month of t as usage stores key it: "2006-01" in UTC.
func MonthKey(t time.Time) string { return t.UTC().Format("2006-01") }
