package credits

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Bounds of [GrantParams].
const (
	// MaxGrant is the largest grant [Ledger.GrantCredits] applies at
	// once: far above any purchase, far below what could overflow a
	// balance.
	MaxGrant = 1_000_000_000
	// MaxNoteBytes bounds [GrantParams.Note].
	MaxNoteBytes = 200
	// MaxIdempotencyKeyBytes bounds [GrantParams.IdempotencyKey].
	MaxIdempotencyKeyBytes = 255
)

// ErrInvalidNote reports a grant without a note, or with a note or
// idempotency key that is too long, not UTF-8, or holds control
// characters.
var ErrInvalidNote = errors.New("credits: invalid grant note")

// GrantParams describes one grant for [Ledger.GrantCredits].
type GrantParams struct {
	// AccountID is the account credited; required.
	AccountID string
	// Credits is the amount added: 1 to [MaxGrant].
	Credits int64
	// Note says why, in words a person reads in the history ("invoice
	// 2026-0042", "goodwill after the outage"): it becomes the entry's
	// Reference. Required; at most [MaxNoteBytes] bytes of UTF-8 without
	// control characters.
	Note string
	// IdempotencyKey, when set, makes the grant apply once per account:
	// the payment provider's event or checkout id, so that a webhook
	// delivered twice credits once. Same text rules as Note, at most
	// [MaxIdempotencyKeyBytes] bytes.
	IdempotencyKey string
}

// GrantCredits adds p.Credits to an account as a [ReasonGrant] entry whose
// Reference is p.Note. It is the hook a host calls when credits are paid
// for (from its payment provider's webhook, after verifying the
// signature) or given by an operator. A repeated IdempotencyKey returns
// the first entry with Replayed set, whatever its note; with another
// amount it fails with [ErrIdempotencyConflict]. Bad parameters fail with
// [ErrInvalidAmount] or [ErrInvalidNote] before the store is asked.
func (l *Ledger) GrantCredits(ctx context.Context, p GrantParams) (Entry, error) {
	if p.AccountID == "" || p.Credits < 1 || p.Credits > MaxGrant {
		return Entry{}, fmt.Errorf("%w: grant of %d to account %q (want 1 to %d)", ErrInvalidAmount, p.Credits, p.AccountID, MaxGrant)
	}
	if p.Note == "" || len(p.Note) > MaxNoteBytes || !plainText(p.Note) {
		return Entry{}, fmt.Errorf("%w: the note must be 1 to %d bytes of text", ErrInvalidNote, MaxNoteBytes)
	}
	if len(p.IdempotencyKey) > MaxIdempotencyKeyBytes || !plainText(p.IdempotencyKey) {
		return Entry{}, fmt.Errorf("%w: the idempotency key must be at most %d bytes of text", ErrInvalidNote, MaxIdempotencyKeyBytes)
	}
	return l.store.Apply(ctx, Change{
		AccountID:      p.AccountID,
		Delta:          p.Credits,
		Reason:         ReasonGrant,
		Reference:      p.Note,
		IdempotencyKey: p.IdempotencyKey,
	})
}

// plainText reports whether s is valid UTF-8 without control characters
// (C0, DEL, C1) or U+FFFD.
func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// Summary is where an account's credits came from and went, over a span
// of days: each field sums the entries of one reason.
type Summary struct {
	// Signup is what the account received when it was created.
	Signup int64
	// Granted is what grants added: purchases and gifts.
	Granted int64
	// Charged is what charges took, as a positive number.
	Charged int64
	// Refunded is what refunds gave back.
	Refunded int64
}

// SummaryParams selects the span of [Ledger.Summary].
type SummaryParams struct {
	// AccountID is the account; required.
	AccountID string
	// From and To bound the span by UTC day, as [TotalsParams] does: From's
	// day is included, To's is not. Typically the account's creation and
	// the day after today. Any length is allowed.
	From, To time.Time
}

// maxSummaryWindows bounds the reads of [Ledger.Summary]: a span of over
// a century is refused rather than read.
const maxSummaryWindows = 100

// Summary sums the account's entries by reason over p's span, from the
// per-day totals ([Ledger.Totals]) in windows of [MaxTotalsDays]: its
// cost grows with the span's length, one read per window, never with the
// number of entries. A span ending before it starts, or longer than a
// century, fails with [ErrInvalidRange].
func (l *Ledger) Summary(ctx context.Context, p SummaryParams) (Summary, error) {
	var s Summary
	from, to := Day(p.From), Day(p.To)
	if to.Before(from) || to.Sub(from) > maxSummaryWindows*MaxTotalsDays*24*time.Hour {
		return s, fmt.Errorf("%w: %s to %s", ErrInvalidRange, from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	for start := from; start.Before(to); {
		end := start.AddDate(0, 0, MaxTotalsDays)
		if end.After(to) {
			end = to
		}
		days, err := l.Totals(ctx, TotalsParams{AccountID: p.AccountID, From: start, To: end})
		if err != nil {
			return s, err
		}
		for _, d := range days {
			switch d.Reason {
			case ReasonSignup:
				s.Signup += d.Sum
			case ReasonGrant:
				s.Granted += d.Sum
			case ReasonCharge:
				s.Charged -= d.Sum
			case ReasonRefund:
				s.Refunded += d.Sum
			}
		}
		start = end
	}
	return s, nil
}
