package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors reported by every [Accounts] backend.
var (
	// ErrNotFound reports an unknown account or key, or a key of another
	// account.
	ErrNotFound = errors.New("store: not found")
	// ErrInvalidKey reports a secret that matches no key, or a revoked key.
	ErrInvalidKey = errors.New("store: invalid API key")
	// ErrEmailTaken reports an account email already registered.
	ErrEmailTaken = errors.New("store: email already registered")
	// ErrKeyExists reports a [CreateKeyParams.Secret] already in use.
	ErrKeyExists = errors.New("store: key already exists")
	// ErrInvalidEmail reports an empty account email.
	ErrInvalidEmail = errors.New("store: invalid email")
	// ErrKeyLimit reports an account that already holds
	// [CreateKeyParams.MaxActive] active keys.
	ErrKeyLimit = errors.New("store: key limit reached")
)

// Errors any backend may report from any method, of this package's
// interfaces and of the other storage interfaces a backend implements
// (credits.Store, jobsdriver.Driver, webhook.Outbox, …). The HTTP API answers
// both with 503 unavailable.
var (
	// ErrUnavailable reports a backend that could not be reached, or
	// whose connection failed during the call: a change that failed with
	// it may or may not have been applied, whole or not at all, and
	// every change acknowledged before is kept. Backends wrap it with
	// their own detail (store/pgstore, store/redisstore); a retry later
	// may succeed.
	ErrUnavailable = errors.New("store: backend unavailable")
	// ErrDataLost reports a backend that lost the data it held while the
	// service ran, such as a Redis server that restarted without
	// persistence: every account, key and queued job is gone, so requests
	// are refused (503) rather than answered as if their keys never
	// existed. Restarting the service does not clear it: the backend
	// refuses the store until an operator restores the data or, knowing
	// that it is gone for good, initialises the store again (for Redis,
	// redisstore's Config.Init).
	ErrDataLost = errors.New("store: the backend lost its data")
)

// Errors a backend reports when it opens a store whose version (a
// PostgreSQL schema's migrations, a Redis store's layout stamp) is not the
// one its code serves. Backends wrap them with their own sentinels and
// detail (pgstore.ErrSchemaTooNew, redisstore.ErrLayoutOutdated, …), so
// that a host tells them apart whatever the backend.
var (
	// ErrTooNew reports a store a newer release migrated: this code
	// would misread it, so it refuses it and changes nothing (a rollback
	// needs the backup taken before the upgrade).
	ErrTooNew = errors.New("store: written by a newer release")
	// ErrNeedsMigration reports a store behind the code, opened without
	// migrating it (a deployment that migrates in a step of its own).
	ErrNeedsMigration = errors.New("store: needs migrating")
)

// DefaultSignupCredits is the credit grant of a new account when
// [CreateAccountParams.SignupCredits] is zero.
const DefaultSignupCredits = 300

// DefaultPlan is the plan of a new account when [CreateAccountParams.Plan]
// is empty.
const DefaultPlan = "free"

// Account is a customer.
type Account struct {
	// ID is a UUID assigned by the backend.
	ID string
	// Email is the address the account was created with, as given.
	Email string
	// Plan names the account's plan, "free" by default.
	Plan string
	// CreatedAt is when the account was created, by the backend's clock.
	CreatedAt time.Time
	// Unconfirmed reports an account created with
	// [CreateAccountParams.Unconfirmed] whose email is not confirmed yet
	// ([Accounts.ConfirmAccount]).
	Unconfirmed bool
}

// Key is an API key as stored: never the secret itself.
type Key struct {
	// ID is a UUID assigned by the backend.
	ID string
	// AccountID is the account the key belongs to.
	AccountID string
	// Name is a label chosen by the account; it may be empty.
	Name string
	// Prefix is the start of the secret, safe to display ([DisplayPrefix]).
	Prefix string
	// Hash is the hex SHA-256 of the secret ([HashSecret]).
	Hash string
	// Permissions lists what the key may do.
	Permissions []Permission
	// CreatedAt is when the key was created.
	CreatedAt time.Time
	// LastUsedAt is when the key last authenticated; zero if never.
	LastUsedAt time.Time
	// RevokedAt is when the key was revoked; zero while it is valid.
	RevokedAt time.Time
}

// Revoked reports whether the key has been revoked.
func (k Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// Can reports whether the key carries permission p.
func (k Key) Can(p Permission) bool {
	for _, q := range k.Permissions {
		if q == p {
			return true
		}
	}
	return false
}

// CreateAccountParams describes a new account.
type CreateAccountParams struct {
	// Email is required and unique, compared by [NormalizeEmail].
	Email string
	// Plan defaults to [DefaultPlan].
	Plan string
	// SignupCredits is granted in the same atomic step as the account is
	// created. Zero means [DefaultSignupCredits]; a negative value grants
	// nothing.
	SignupCredits int64
	// PasswordHash, when set, is stored in the same atomic step, for
	// backends that also implement [Passwords].
	PasswordHash string
	// Unconfirmed creates an account whose email is still to be
	// confirmed: its signup grant is kept back until
	// [Accounts.ConfirmAccount].
	Unconfirmed bool
}

// Credits returns the signup grant p asks for, applying the default.
func (p CreateAccountParams) Credits() int64 {
	switch {
	case p.SignupCredits == 0:
		return DefaultSignupCredits
	case p.SignupCredits < 0:
		return 0
	}
	return p.SignupCredits
}

// PlanOrDefault returns p.Plan, or [DefaultPlan] when it is empty.
func (p CreateAccountParams) PlanOrDefault() string {
	if p.Plan == "" {
		return DefaultPlan
	}
	return p.Plan
}

// CreateKeyParams describes a new API key.
type CreateKeyParams struct {
	// AccountID is the owner; it must exist.
	AccountID string
	// Name is an optional label.
	Name string
	// Permissions of the key; nil means [SignupPermissions]. Each must be
	// valid.
	Permissions []Permission
	// Secret, when set, is used instead of a generated secret (for
	// bootstrapping a known key); it must pass [CheckSecret].
	Secret string
	// MaxActive, when positive, is the most active (unrevoked) keys the
	// account may hold: a key that would exceed it is not created. Zero
	// means no bound.
	MaxActive int
}

// NormalizeEmail returns the form of an account email used for uniqueness
// and lookup: lower-cased.
func NormalizeEmail(email string) string { return strings.ToLower(email) }

// Accounts stores accounts and their API keys.
//
// An Accounts may be called concurrently from many goroutines and, for
// shared backends, from many processes; each method is atomic on its own.
// Every method must honor ctx: when ctx ends first it returns an error
// wrapping ctx.Err() and changes nothing that it has not acknowledged.
type Accounts interface {
	// CreateAccount creates an account and, in the same atomic step, writes
	// its signup grant ([CreateAccountParams.Credits]) to the credits
	// ledger with reason "signup". It fails with [ErrEmailTaken] when the
	// email is registered and [ErrInvalidEmail] when it is empty.
	CreateAccount(ctx context.Context, p CreateAccountParams) (Account, error)

	// ConfirmAccount confirms an unconfirmed account's email and, in the
	// same atomic step, writes the signup grant it was created with
	// (reason "signup", idempotency key "signup"), returning the credits
	// granted. Confirming a confirmed account changes nothing and grants
	// 0. Unknown account: [ErrNotFound].
	ConfirmAccount(ctx context.Context, id string) (granted int64, err error)

	// GetAccount returns the account with the id, or [ErrNotFound].
	GetAccount(ctx context.Context, id string) (Account, error)

	// GetAccountByEmail returns the account with the email (compared by
	// [NormalizeEmail]), or [ErrNotFound].
	GetAccountByEmail(ctx context.Context, email string) (Account, error)

	// CreateKey creates a key and returns it with its secret. The secret
	// is returned here only: the backend stores its hash and prefix, never
	// the secret. Unknown account: [ErrNotFound]. Invalid permission:
	// an error matching [ErrInvalidPermission]. A given secret already in
	// use: [ErrKeyExists]. An account holding [CreateKeyParams.MaxActive]
	// active keys or more: [ErrKeyLimit]; the count and the insert are one
	// atomic step, so concurrent calls never exceed the bound.
	CreateKey(ctx context.Context, p CreateKeyParams) (Key, string, error)

	// ListKeys returns the account's keys, revoked ones included, oldest
	// first. An unknown account has no keys.
	ListKeys(ctx context.Context, accountID string) ([]Key, error)

	// RevokeKey revokes a key of the account. Revoking a revoked key
	// succeeds and keeps the first revocation time. An unknown key, or a
	// key of another account: [ErrNotFound].
	RevokeKey(ctx context.Context, accountID, keyID string) error

	// Authenticate finds the key whose hash is [HashSecret](secret) and
	// records its use in LastUsedAt (at most once a minute per key is
	// enough). An unknown, malformed or revoked secret: [ErrInvalidKey].
	Authenticate(ctx context.Context, secret string) (Key, error)
}

// MaxPlanBytes bounds a plan's name.
const MaxPlanBytes = 64

// ErrInvalidPlan reports a plan name that is empty, longer than
// [MaxPlanBytes], or not made of letters, digits, '-', '_' and '.'.
var ErrInvalidPlan = errors.New("store: invalid plan name")

// CheckPlan returns nil for a plan name a backend stores, else an error
// matching [ErrInvalidPlan].
func CheckPlan(name string) error {
	if name == "" || len(name) > MaxPlanBytes || strings.TrimFunc(name, func(r rune) bool {
		return r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
	}) != "" {
		return fmt.Errorf("%w: %q", ErrInvalidPlan, name)
	}
	return nil
}

// PlanSetter is implemented by an [Accounts] backend that can change an
// account's plan: every backend here. The plan is read back by
// [Accounts.GetAccount] in every process sharing the backend.
type PlanSetter interface {
	// SetPlan makes plan the account's plan. An unknown account:
	// [ErrNotFound]; a name failing [CheckPlan]: [ErrInvalidPlan],
	// before the backend is asked.
	SetPlan(ctx context.Context, accountID, plan string) error
}
