package store

import (
	"context"
	"errors"
	"time"
)

// Session is a console session as a backend keeps it.
type Session struct {
	// ID is the hex SHA-256 of the session's token ([HashSecret]): the
	// token itself, which the browser holds, is never stored.
	ID string
	// AccountID is the signed-in account, or "" for a session that keeps
	// something else.
	AccountID string
	// Data is the session's encoded values, opaque to the backend.
	Data []byte
	// Expiry is when the session ends.
	Expiry time.Time
}

// SessionStore keeps the console's sessions under the hash of their
// token, each with the account it signed in, so that a password change
// can end every other session of the account.
//
// FindSession of an unknown or expired id reports found false and no
// error; DeleteSession of an unknown id is not an error. Like every
// backend interface, a SessionStore may be called concurrently from
// several processes sharing the backend.
type SessionStore interface {
	// FindSession returns the data of the live session with the id.
	FindSession(ctx context.Context, id string) (data []byte, found bool, err error)
	// SaveSession creates or replaces the session s.ID; an expiry in the
	// past deletes it.
	SaveSession(ctx context.Context, s Session) error
	// UpdateSession replaces the data and expiry of the live session
	// s.ID, and does nothing when it has ended (expired, deleted, or
	// ended with its account's): a request that loaded a session before
	// it was ended cannot bring it back.
	UpdateSession(ctx context.Context, s Session) error
	// DeleteSession ends the session with the id.
	DeleteSession(ctx context.Context, id string) error
	// DeleteAccountSessions ends every session of the account but the
	// one whose id is keepID ("" keeps none).
	DeleteAccountSessions(ctx context.Context, accountID, keepID string) error
}

// TokenPurpose says what a single-use [Token] is for.
type TokenPurpose string

// The purposes of the console's tokens.
const (
	// TokenConfirm confirms an account's email.
	TokenConfirm TokenPurpose = "confirm"
	// TokenReset sets a new password.
	TokenReset TokenPurpose = "reset"
	// TokenSignin finishes a sign-in in the browser that started it.
	TokenSignin TokenPurpose = "signin"
)

// ErrTokenInvalid reports a token that is unknown, used already, expired,
// or for another purpose.
var ErrTokenInvalid = errors.New("store: token invalid or expired")

// Token is a single-use, expiring token sent by mail, as a backend keeps
// it.
type Token struct {
	// Hash is the hex SHA-256 of the token ([HashSecret]): the token
	// itself is in the mail only.
	Hash string
	// Purpose is what the token may be used for.
	Purpose TokenPurpose
	// AccountID is the account the token acts on.
	AccountID string
	// Expiry is when the token stops working.
	Expiry time.Time
}

// Tokens keeps the single-use tokens the console mails (an email
// confirmation, a password reset) by their hash.
type Tokens interface {
	// CreateToken stores t until t.Expiry. The account must exist
	// ([ErrNotFound]).
	CreateToken(ctx context.Context, t Token) error
	// TakeToken uses up the live token of the purpose with the hash and
	// returns it: of two concurrent calls for one token, one gets it and
	// the other [ErrTokenInvalid], as does an unknown, used or expired
	// token or one of another purpose.
	TakeToken(ctx context.Context, purpose TokenPurpose, hash string) (Token, error)
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
