package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
)

// Config configures a [Queue]. The zero value gives the defaults.
type Config struct {
	// Retention is how long completed jobs are kept before [Queue.Cleanup]
	// removes them. Default [DefaultRetention].
	Retention time.Duration
	// IdempotencyTTL is how long a batch's idempotency key is remembered
	// ([EnqueueChargedParams.IdempotencyTTL]). Default
	// [DefaultIdempotencyTTL].
	IdempotencyTTL time.Duration
	// Logger receives the queue's records. Default: discard.
	Logger *slog.Logger
}

// Queue is the job queue. It is safe for concurrent use.
type Queue struct {
	driver    jobsdriver.Driver
	ledger    *credits.Ledger
	retention time.Duration
	idemTTL   time.Duration
	logger    *slog.Logger
}

// NewQueue returns a Queue over driver. ledger charges batches when driver
// is not a [jobsdriver.ChargingDriver]; it may be nil when [Queue.EnqueueCharged] is
// not used with such a driver. cfg may be nil.
func NewQueue(driver jobsdriver.Driver, ledger *credits.Ledger, cfg *Config) (*Queue, error) {
	if driver == nil {
		return nil, errors.New("jobs: nil driver")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Retention < 0 || c.IdempotencyTTL < 0 {
		return nil, fmt.Errorf("jobs: negative retention %v or idempotency TTL %v", c.Retention, c.IdempotencyTTL)
	}
	return &Queue{
		driver:    driver,
		ledger:    ledger,
		retention: cmp.Or(c.Retention, DefaultRetention),
		idemTTL:   cmp.Or(c.IdempotencyTTL, DefaultIdempotencyTTL),
		logger:    cmp.Or(c.Logger, slog.New(slog.DiscardHandler)),
	}, nil
}

// Enqueue adds one job per address for the account, without charging, and
// returns their ids in order.
func (q *Queue) Enqueue(ctx context.Context, account string, emails []string) ([]string, error) {
	if err := checkBatch(account, emails); err != nil {
		return nil, err
	}
	return q.driver.Enqueue(ctx, EnqueueParams{AccountID: account, Emails: emails})
}

// EnqueueWith adds one job per address of p, without charging, and returns
// their ids in order: [Queue.Enqueue] with a source and a cost to record.
func (q *Queue) EnqueueWith(ctx context.Context, p EnqueueParams) ([]string, error) {
	if err := checkBatch(p.AccountID, p.Emails); err != nil {
		return nil, err
	}
	return q.driver.Enqueue(ctx, p)
}

// EnqueueCharged charges one credit per address and enqueues the jobs,
// atomically: either all jobs exist and the charge is recorded, or neither.
// Too few credits: a *credits.InsufficientError (matching
// credits.ErrInsufficient) and nothing is charged or enqueued.
//
// With a [jobsdriver.ChargingDriver] this is one step in the backend. Otherwise the
// ledger charges first and the jobs are enqueued after; if that fails the
// charge is refunded. That fallback is weaker in three ways, which is why
// every backend here implements ChargingDriver: a replayed idempotency key
// returns [ErrBatchReplayed] instead of the original ids; a key whose
// enqueue failed (and was refunded) is used up, so the retry needs a new
// key; and a crash between the charge and the enqueue loses the charge.
func (q *Queue) EnqueueCharged(ctx context.Context, p EnqueueChargedParams) ([]string, error) {
	if err := checkBatch(p.AccountID, p.Emails); err != nil {
		return nil, err
	}
	if p.IdempotencyTTL <= 0 {
		p.IdempotencyTTL = q.idemTTL
	}
	if cd, ok := q.driver.(jobsdriver.ChargingDriver); ok {
		return cd.EnqueueCharged(ctx, p)
	}
	if q.ledger == nil {
		return nil, errors.New("jobs: EnqueueCharged needs a ledger or a ChargingDriver")
	}
	n := int64(len(p.Emails))
	key := p.IdempotencyKey
	// The fingerprint travels in the charge's reference, which a replayed
	// charge returns: a mismatch is a key reused for another batch.
	ref := key
	if p.Fingerprint != "" {
		ref = "batch:" + p.Fingerprint
	}
	entry, err := q.ledger.Apply(ctx, credits.Change{
		AccountID:      p.AccountID,
		Delta:          -n,
		Reason:         credits.ReasonCharge,
		Reference:      ref,
		IdempotencyKey: key,
	})
	if err != nil {
		return nil, err
	}
	if entry.Replayed {
		if entry.Reference != ref {
			return nil, fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, key)
		}
		return nil, ErrBatchReplayed
	}
	ids, err := q.driver.Enqueue(ctx, EnqueueParams{AccountID: p.AccountID, Emails: p.Emails, Cost: 1, Source: p.Source})
	if err != nil {
		rkey := ""
		if key != "" {
			rkey = "refund:" + key
		}
		if _, rerr := q.ledger.Refund(context.WithoutCancel(ctx), p.AccountID, n, rkey); rerr != nil {
			q.logger.ErrorContext(ctx, "jobs: refund after failed enqueue", "account", p.AccountID, "amount", n, "err", rerr)
			return nil, errors.Join(err, rerr)
		}
		return nil, err
	}
	return ids, nil
}

func checkBatch(account string, emails []string) error {
	if account == "" {
		return errors.New("jobs: empty account")
	}
	if len(emails) == 0 {
		return ErrEmptyBatch
	}
	return nil
}

// RescueExpired makes jobs whose leases expired available again and returns
// how many.
func (q *Queue) RescueExpired(ctx context.Context) (int, error) {
	return q.driver.RescueExpired(ctx, jobsdriver.RescueParams{})
}

// Get returns the job with the id within the account; another account's job
// is [ErrNotFound], like an unknown one.
func (q *Queue) Get(ctx context.Context, account, id string) (Job, error) {
	return q.driver.Get(ctx, account, id)
}

// Cleanup removes jobs completed longer ago than the retention and returns
// how many it removed.
func (q *Queue) Cleanup(ctx context.Context) (int, error) {
	return q.driver.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now().Add(-q.retention)})
}

// ErrNoStats reports a driver that cannot tell the queue's depth.
var ErrNoStats = errors.New("jobs: the driver cannot tell the queue's depth")

// Stats returns the queue's depth, for an operator's metrics, or
// [ErrNoStats] when the driver cannot tell it.
func (q *Queue) Stats(ctx context.Context) (QueueStats, error) {
	sd, ok := q.driver.(jobsdriver.StatsDriver)
	if !ok {
		return QueueStats{}, ErrNoStats
	}
	return sd.QueueStats(ctx)
}

// UnknownResult is the result a job completes with when it could not be
// validated at all and its validator cannot tell its own UNKNOWN for the
// address ([UnknownValidator]): status UNKNOWN, syntax unchecked, provider
// "Unknown".
func UnknownResult(email string) emailcheck.Result {
	return emailcheck.Result{
		Email: email,
		Confidence: emailcheck.Confidence{
			Status:            emailcheck.StatusUnknown,
			AliasStatus:       emailcheck.AliasMaybeNot,
			EquivalentDomains: []string{},
		},
		Provider: emailcheck.Provider{Name: "Unknown"},
		Meta:     emailcheck.Meta{Source: emailcheck.SourceAPIAsync},
	}
}
