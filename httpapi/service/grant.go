package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
)

// Errors of [GrantCredits] and [ShowAccount].
var (
	// ErrNoAccount reports an email no account has.
	ErrNoAccount = errors.New("service: no account has this email")
	// ErrInvalidGrant reports a grant's bad amount, reason or key; the
	// error also matches [credits.ErrInvalidAmount] or
	// [credits.ErrInvalidNote].
	ErrInvalidGrant = errors.New("service: invalid grant")
)

// GrantParams names a grant for [GrantCredits].
type GrantParams struct {
	// Email is the account's email; required.
	Email string
	// Credits is the amount added: 1 to [credits.MaxGrant].
	Credits int64
	// Reason says why; the account's history shows it as the entry's
	// reference. Required, at most [credits.MaxNoteBytes] bytes of text.
	Reason string
	// IdempotencyKey, when set, makes the grant apply once (a payment's
	// id): a repeat returns the first entry.
	IdempotencyKey string
}

// Grant is the outcome of [GrantCredits].
type Grant struct {
	// AccountID is the account credited.
	AccountID string
	// Entry is the ledger entry, Replayed when the IdempotencyKey had
	// already granted.
	Entry credits.Entry
	// Balance is the balance after the grant.
	Balance int64
}

// GrantCredits adds credits to the account with the email on backend b,
// as one ledger entry with reason "grant": what an operator's command or
// a host's payment hook does. Bad parameters fail with
// [credits.ErrInvalidAmount] or [credits.ErrInvalidNote], an unknown email
// with [ErrNoAccount]; bad parameters also match [ErrInvalidGrant].
func GrantCredits(ctx context.Context, b *backend.Backend, p GrantParams) (Grant, error) {
	acct, err := b.Accounts.GetAccountByEmail(ctx, p.Email)
	if errors.Is(err, store.ErrNotFound) {
		return Grant{}, fmt.Errorf("%w: %q", ErrNoAccount, p.Email)
	}
	if err != nil {
		return Grant{}, fmt.Errorf("look up account: %w", err)
	}
	ledger := credits.New(b.Credits, nil)
	e, err := ledger.GrantCredits(ctx, credits.GrantParams{AccountID: acct.ID, Credits: p.Credits, Note: p.Reason, IdempotencyKey: p.IdempotencyKey})
	if errors.Is(err, credits.ErrInvalidAmount) || errors.Is(err, credits.ErrInvalidNote) {
		return Grant{}, fmt.Errorf("%w: %w", ErrInvalidGrant, err)
	}
	if err != nil {
		return Grant{}, err
	}
	bal, err := ledger.Balance(ctx, acct.ID)
	if err != nil {
		return Grant{}, fmt.Errorf("balance: %w", err)
	}
	return Grant{AccountID: acct.ID, Entry: e, Balance: bal}, nil
}

// AccountSummary is an account as an operator sees it.
type AccountSummary struct {
	// Account is the stored account.
	Account store.Account
	// Balance is its balance now.
	Balance int64
	// Credits is where its credits came from and went since its creation.
	Credits credits.Summary
	// Recent are its newest ledger entries, newest first (at most 10).
	Recent []credits.Entry
}

// ShowAccount returns the account with the email on backend b, with its
// balance, credit summary and newest entries; an unknown email fails with
// [ErrNoAccount]. Its cost does not grow with the account's history.
func ShowAccount(ctx context.Context, b *backend.Backend, email string, now time.Time) (AccountSummary, error) {
	acct, err := b.Accounts.GetAccountByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return AccountSummary{}, fmt.Errorf("%w: %q", ErrNoAccount, email)
	}
	if err != nil {
		return AccountSummary{}, fmt.Errorf("look up account: %w", err)
	}
	ledger := credits.New(b.Credits, nil)
	s := AccountSummary{Account: acct}
	if s.Balance, err = ledger.Balance(ctx, acct.ID); err != nil {
		return s, fmt.Errorf("balance: %w", err)
	}
	if s.Credits, err = ledger.Summary(ctx, credits.SummaryParams{AccountID: acct.ID, From: acct.CreatedAt, To: now.Add(24 * time.Hour)}); err != nil {
		return s, fmt.Errorf("credit summary: %w", err)
	}
	page, err := ledger.HistoryPage(ctx, credits.PageParams{AccountID: acct.ID, Limit: 10})
	if err != nil {
		return s, fmt.Errorf("history: %w", err)
	}
	s.Recent = page.Entries
	return s, nil
}
