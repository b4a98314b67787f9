package store

import (
	"context"
	"errors"
	"time"
)

// ErrNoticeLost reports a claimed [Notice] whose claim another instance
// took over (its lease ran out) or that is already done: the caller
// leaves it to its new holder.
var ErrNoticeLost = errors.New("store: notice claimed elsewhere")

// NoticeKeep is how long a done notice is remembered, so that the batch
// it was for is never noticed twice: longer than a batch is kept.
const NoticeKeep = 8 * 24 * time.Hour

// Notice is a durable "batch finished" notice waiting to be mailed to
// the batch's account.
type Notice struct {
	// AccountID owns the batch; BatchID names it.
	AccountID, BatchID string
	// Token is the claim's, set by [Notices.ClaimNotices].
	Token string
	// Attempts counts the claims before this one.
	Attempts int
}

// Notices keeps each account's choice of a mail when a batch finishes,
// and the notices of finished batches to mail, claimed by one instance
// at a time and retried until done.
//
// A notice is added once per batch: adding it again, before or after it
// is done (for [NoticeKeep]), changes nothing. It is due when added; an
// instance claims due notices for a lease, then marks each done or
// delays it; a claim whose lease runs out (its instance crashed) is
// claimed again. Each method is atomic, safe for concurrent use from
// many processes sharing the backend, and honours ctx.
type Notices interface {
	// SetFinishMail turns the account's mail on finished batches on or
	// off. Unknown account: [ErrNotFound].
	SetFinishMail(ctx context.Context, accountID string, on bool) error
	// FinishMail tells whether the account chose the mail; off until
	// chosen. Unknown account: [ErrNotFound].
	FinishMail(ctx context.Context, accountID string) (bool, error)
	// AddNotice adds the batch's notice, due now, unless the batch has
	// one, pending or done.
	AddNotice(ctx context.Context, accountID, batchID string) error
	// ClaimNotices claims at most limit notices due at now, for lease
	// (each given a new Token; a claim still held elsewhere is not
	// due), oldest due first.
	ClaimNotices(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Notice, error)
	// DoneNotice marks a claimed notice done. A claim no longer held:
	// [ErrNoticeLost].
	DoneNotice(ctx context.Context, n Notice) error
	// DelayNotice makes a claimed notice due again at due, one attempt
	// more. A claim no longer held: [ErrNoticeLost].
	DelayNotice(ctx context.Context, n Notice, due time.Time) error
}
