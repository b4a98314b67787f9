package store

import (
	"context"
	"errors"
)

// MaxRecoveryCodes bounds the recovery codes a login keeps.
const MaxRecoveryCodes = 16

// ErrTooManyCodes reports a [TOTP] with more than [MaxRecoveryCodes]
// recovery codes.
var ErrTooManyCodes = errors.New("store: too many recovery codes")

// ErrTOTPExists reports enabling a second factor for a login that has
// one: replacing it is disabling it, then enabling anew.
var ErrTOTPExists = errors.New("store: second factor exists")

// TOTP is a login's second factor: a time-based one-time password
// secret (RFC 6238) and the hashes of its unused recovery codes.
//
// A login is an account's owner, named by the account's id, or a
// member, named by the member's id: both are UUIDs, so one namespace
// holds them.
type TOTP struct {
	// LoginID is the account's id for its owner, the member's id for a
	// member.
	LoginID string
	// AccountID is the account the login signs in to.
	AccountID string
	// Secret is the shared secret, base32 as an authenticator app reads
	// it.
	Secret string
	// RecoveryHashes are the hex SHA-256 ([HashSecret]) of the recovery
	// codes not used yet.
	RecoveryHashes []string
	// LastStep is the last time step (Unix seconds / 30) whose code was
	// accepted: a code of this step or an earlier one is refused.
	LastStep int64
}

// TwoFactor keeps the logins' second factors and each account's choice
// to require one of its whole team.
//
// Like every backend interface, a TwoFactor may be called concurrently
// from several processes sharing the backend: the one-time uses
// (UseTOTPStep, UseRecoveryCode) are atomic, so that of two concurrent
// uses of one code exactly one succeeds.
type TwoFactor interface {
	// EnableTOTP stores t as its login's second factor (LastStep as
	// given). A login that has one keeps it: [ErrTOTPExists], so that of
	// concurrent enables exactly one succeeds. The account must exist
	// ([ErrNotFound]); more than [MaxRecoveryCodes] hashes:
	// [ErrTooManyCodes].
	EnableTOTP(ctx context.Context, t TOTP) error
	// TOTP returns the login's second factor, or [ErrNotFound].
	TOTP(ctx context.Context, loginID string) (TOTP, error)
	// DisableTOTP removes the login's second factor; none: [ErrNotFound].
	DisableTOTP(ctx context.Context, loginID string) error
	// UseTOTPStep records step as the login's last used step if it is
	// later than the one recorded, and reports whether it was: false for
	// a step used already or earlier (a replayed code). A login without
	// a second factor: [ErrNotFound].
	UseTOTPStep(ctx context.Context, loginID string, step int64) (bool, error)
	// UseRecoveryCode removes hash from the login's recovery codes and
	// reports whether it was there: a code works once. A login without
	// a second factor: [ErrNotFound].
	UseRecoveryCode(ctx context.Context, loginID, hash string) (bool, error)
	// SetTeamTOTP records whether the account requires a second factor of
	// every login of its team. An unknown account: [ErrNotFound].
	SetTeamTOTP(ctx context.Context, accountID string, required bool) error
	// TeamTOTP reports whether the account requires a second factor; an
	// unknown account requires none.
	TeamTOTP(ctx context.Context, accountID string) (bool, error)
}
