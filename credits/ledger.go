package credits

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
)

// Config configures a [Ledger]. The zero value gives the defaults.
type Config struct {
	// Logger receives a debug record for every refused charge. Default:
	// a logger that discards.
	Logger *slog.Logger
}

// Ledger keeps credit balances. It is safe for concurrent use.
type Ledger struct {
	store   Store
	grouper *grouper // nil unless store is a GroupStore
	logger  *slog.Logger
}

// New returns a Ledger over store; cfg may be nil.
func New(store Store, cfg *Config) *Ledger {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	l := &Ledger{
		store:  store,
		logger: cmp.Or(c.Logger, slog.New(slog.DiscardHandler)),
	}
	if gs, ok := store.(GroupStore); ok {
		l.grouper = newGrouper(gs)
	}
	return l
}

// write applies c: in a group of its account's changes when the store
// is a [GroupStore], else alone.
func (l *Ledger) write(ctx context.Context, c Change) (Entry, error) {
	if l.grouper != nil {
		return l.grouper.apply(ctx, c)
	}
	return l.store.Apply(ctx, c)
}

// Apply applies one change as it is: a charge, a grant or a refund with
// a reference of the caller's choosing (a batch, a job) besides its
// idempotency key. [Ledger.Charge], [Ledger.Grant] and [Ledger.Refund]
// cover the common cases.
func (l *Ledger) Apply(ctx context.Context, c Change) (Entry, error) {
	if c.AccountID == "" || c.Delta == 0 {
		return Entry{}, fmt.Errorf("%w: account %q, delta %d", ErrInvalidAmount, c.AccountID, c.Delta)
	}
	return l.write(ctx, c)
}

// Balance returns the account's balance.
func (l *Ledger) Balance(ctx context.Context, account string) (int64, error) {
	return l.store.Balance(ctx, account)
}

// Grant adds amount credits to account. A non-empty key makes the grant
// idempotent: repeating it returns the original entry.
func (l *Ledger) Grant(ctx context.Context, account string, amount int64, key string) (Entry, error) {
	return l.apply(ctx, account, amount, ReasonGrant, key)
}

// Charge takes amount credits from account, all or nothing. When the
// balance is too small it returns an [*InsufficientError] and changes
// nothing. A non-empty idempotencyKey makes the charge apply once:
// repeating it with the same amount returns the original entry without
// charging again; repeating it with another amount fails with
// [ErrIdempotencyConflict].
func (l *Ledger) Charge(ctx context.Context, account string, amount int64, idempotencyKey string) (Entry, error) {
	e, err := l.apply(ctx, account, -amount, ReasonCharge, idempotencyKey)
	if err != nil && l.logger.Enabled(ctx, slog.LevelDebug) {
		l.logger.DebugContext(ctx, "credits: charge refused", "account", account, "amount", amount, "err", err)
	}
	return e, err
}

// Refund gives amount credits back to account. A non-empty key makes the
// refund idempotent, like [Ledger.Charge].
func (l *Ledger) Refund(ctx context.Context, account string, amount int64, key string) (Entry, error) {
	return l.apply(ctx, account, amount, ReasonRefund, key)
}

// History returns the account's entries, oldest first. Their deltas sum to
// the balance. It reads every entry, however many: what a person or a
// client reads goes through [Ledger.HistoryPage] and [Ledger.Totals].
func (l *Ledger) History(ctx context.Context, account string) ([]Entry, error) {
	return l.store.History(ctx, HistoryParams{AccountID: account})
}

func (l *Ledger) apply(ctx context.Context, account string, delta int64, reason Reason, key string) (Entry, error) {
	if account == "" {
		return Entry{}, fmt.Errorf("%w: empty account", ErrInvalidAmount)
	}
	if (reason == ReasonCharge && delta >= 0) || (reason != ReasonCharge && delta <= 0) {
		return Entry{}, fmt.Errorf("%w: %d", ErrInvalidAmount, abs(delta))
	}
	return l.write(ctx, Change{
		AccountID:      account,
		Delta:          delta,
		Reason:         reason,
		Reference:      key,
		IdempotencyKey: key,
	})
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
