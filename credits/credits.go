package credits

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors reported by a [Ledger] and by every [Store].
var (
	// ErrInsufficient reports a charge larger than the balance. The error
	// returned is an [*InsufficientError] carrying the figures.
	ErrInsufficient = errors.New("credits: insufficient credits")
	// ErrIdempotencyConflict reports an idempotency key reused with a
	// different amount or reason.
	ErrIdempotencyConflict = errors.New("credits: idempotency key reused with a different amount")
	// ErrInvalidAmount reports an amount that is zero or negative, or a
	// change with an empty account.
	ErrInvalidAmount = errors.New("credits: invalid amount")
)

// InsufficientError reports a charge that would take a balance below zero.
// It matches [ErrInsufficient] with errors.Is.
type InsufficientError struct {
	// Balance is the account's balance when the charge was refused.
	Balance int64
	// Required is the amount the charge asked for.
	Required int64
}

// Error implements error.
func (e *InsufficientError) Error() string {
	return fmt.Sprintf("credits: insufficient credits: balance %d, required %d", e.Balance, e.Required)
}

// Is reports whether target is [ErrInsufficient].
func (e *InsufficientError) Is(target error) bool { return target == ErrInsufficient }

// Reason says why an [Entry] changed a balance.
type Reason string

// Reasons recorded in the history.
const (
	// ReasonSignup is the grant an account receives when it is created.
	ReasonSignup Reason = "signup"
	// ReasonGrant is any other addition of credits (a purchase, a gift).
	ReasonGrant Reason = "grant"
	// ReasonCharge is a deduction for work done or accepted.
	ReasonCharge Reason = "charge"
	// ReasonRefund gives back credits of a charge whose work produced no
	// answer (an UNKNOWN result).
	ReasonRefund Reason = "refund"
)

// Entry is one change of one account's balance. Entries are never changed or
// removed.
type Entry struct {
	// ID identifies the entry within its store: numeric text, increasing in
	// the order entries were written.
	ID string
	// AccountID is the account whose balance changed.
	AccountID string
	// Delta is the change: negative for charges, positive otherwise.
	Delta int64
	// Reason says why the balance changed.
	Reason Reason
	// Reference ties the entry to what caused it: a request id, a job id, a
	// batch. It may be empty.
	Reference string
	// IdempotencyKey is the key the change was applied under, or empty.
	IdempotencyKey string
	// Time is when the entry was written, by the store's clock.
	Time time.Time
	// Replayed is true on the entry [Store.Apply] returns for a repeated
	// idempotency key: that call changed nothing. It is not stored, and
	// entries from [Store.History] have it false.
	Replayed bool
}

// Change describes one change for [Store.Apply].
type Change struct {
	// AccountID is the account to change; required.
	AccountID string
	// Delta is the change; it must not be zero. A negative delta is a
	// charge and must not take the balance below zero.
	Delta int64
	// Reason is recorded in the entry.
	Reason Reason
	// Reference is recorded in the entry.
	Reference string
	// IdempotencyKey, when not empty, makes the change apply at most once
	// per account.
	IdempotencyKey string
}

// HistoryParams selects entries for [Store.History].
type HistoryParams struct {
	// AccountID is the account whose entries are listed; required.
	AccountID string
}

// Store is the storage a [Ledger] runs over.
//
// A Store may be called concurrently from many goroutines and, for shared
// backends, from many processes; each method is atomic on its own. Every
// method must honor ctx: when ctx ends before the change is committed, the
// method returns an error wrapping ctx.Err() and the change is not applied.
// Errors from the backend itself (a lost connection) are returned wrapped;
// a change whose commit was acknowledged is never lost.
type Store interface {
	// Balance returns the account's balance: the sum of its entries, or
	// zero for an account without entries.
	Balance(ctx context.Context, account string) (int64, error)

	// Apply appends one entry, atomically:
	//   - if c.IdempotencyKey is set and an entry of c.Account already
	//     carries it, Apply writes nothing and returns that entry, with
	//     Replayed set, when its Delta and Reason equal c's, else an error matching
	//     [ErrIdempotencyConflict];
	//   - if c.Delta is negative and the balance is less than -c.Delta,
	//     Apply writes nothing and returns an [*InsufficientError];
	//   - otherwise it appends the entry and returns it.
	Apply(ctx context.Context, c Change) (Entry, error)

	// History returns the account's entries, oldest first.
	History(ctx context.Context, p HistoryParams) ([]Entry, error)
}
