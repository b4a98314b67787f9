package jobsdriver

import (
	"context"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

// Lease is a job handed to one worker until ExpiresAt.
type Lease struct {
	jobtype.Job
	// Token identifies this lease; every change made under the lease
	// presents it.
	Token string
	// ExpiresAt is when the lease ends unless renewed.
	ExpiresAt time.Time
}

// LeaseParams describes a lease request.
type LeaseParams struct {
	// Max is the most jobs to lease; at least 1.
	Max int
	// Duration is the lease length; positive.
	Duration time.Duration
}

// HeartbeatParams renews a lease.
type HeartbeatParams struct {
	ID    string
	Token string
	// Duration is the new lease length, counted from now.
	Duration time.Duration
}

// CompleteParams completes a leased job.
type CompleteParams struct {
	ID    string
	Token string
	// Result is stored as the job's result.
	Result emailcheck.Result
	// Refund, when positive, is credited back to the job's account (reason
	// refund, reference the job id) in the same atomic step.
	Refund int64
	// Event, when not nil, is written to the job's account's outbox in the
	// same atomic step, byte for byte, as a pending delivery with the
	// job's account and id, due at its CreatedAt (zero: the completion
	// time). An event whose ID is already in the outbox makes the
	// completion fail without changing anything.
	Event *webhook.Event
	// BatchEvent, when not nil, is a batch.completed event
	// ([webhook.NewBatchEvent]) written to the job's account's outbox in
	// the same atomic step if and only if this completion is the last of
	// the job's batch, due at its CreatedAt (required). Its payload is the
	// one [webhook.BatchCompletedPayload] gives for the batch's final
	// counts: the driver stores the counts as the event's
	// [webhook.Event.Batch] and its outbox makes the bytes
	// ([webhook.Event.Expand]) whenever it reads the event. Every completion of a batch may carry one; exactly
	// one of them is written.
	BatchEvent *webhook.Event
	// Retention is how long the completed job is kept: the queue's
	// ([jobs.Config.Retention]), so that a driver whose storage expires data on
	// its own (Redis) keeps it exactly as long as the queue's Cleanup
	// would. Zero leaves it to the driver's default.
	Retention time.Duration
}

// RetryParams gives a leased job back.
type RetryParams struct {
	ID    string
	Token string
	// RunAt is the earliest time the job may be leased again; zero means
	// now.
	RunAt time.Time
	// Error, when set, records a failed attempt: it becomes LastError and
	// Errors grows by one. An empty Error hands the job back without
	// counting an attempt (a worker shutting down).
	Error string
	// Unjudged, with an Error, becomes the job's [jobtype.Job.Unjudged]: the
	// number of unjudged attempts in a row this failure ends, 0 for a
	// failure of another kind. Without an Error the job's count is kept.
	Unjudged int
}

// RescueParams selects expired leases to rescue.
type RescueParams struct {
	// Limit is the most jobs to rescue in one call; 0 means no limit.
	Limit int
}

// CleanupParams selects completed jobs to remove.
type CleanupParams struct {
	// CompletedBefore: completed jobs that completed before this time are
	// removed (by a [GranularCleanup] driver, those that completed before
	// the start of its period holding this time). Active jobs and jobs
	// completed at or after this time are never removed.
	CompletedBefore time.Time
	// Limit is the most jobs to remove one by one in one call; 0 means no
	// limit.
	Limit int
}

// GranularCleanup is implemented by a [Driver] whose Cleanup removes
// completed jobs by whole periods of time (partitions) rather than one
// by one: a completed job may then outlive CleanupParams.CompletedBefore
// by up to CleanupGranularity.
type GranularCleanup interface {
	CleanupGranularity() time.Duration
}

// Driver is the storage a [jobs.Queue] runs over.
//
// A Driver may be called concurrently from many goroutines and, for shared
// backends, from many processes; each method is atomic on its own. Every
// method must honor ctx: when ctx ends first it returns an error wrapping
// ctx.Err(), and a change it did not acknowledge must not be half applied.
// Time (lease expiry, run-at, completion) is the driver's clock.
type Driver interface {
	// Enqueue creates one available job per address and returns their ids,
	// in the order of p.Emails, unique and increasing.
	Enqueue(ctx context.Context, p jobtype.EnqueueParams) ([]string, error)

	// Lease hands out up to p.Max available jobs whose run-at has come,
	// in the fair order below, each with a new unique token and an expiry
	// p.Duration from now. A job is never leased to two holders at once.
	//
	// The fair order: accounts with jobs ready take turns, one job each,
	// whatever each has queued, so that an account's long list never
	// makes another's batch wait for it; within an account, jobs come in
	// enqueue order (lowest ids first). A batch (or a list) of an account
	// whose jobs are all handed out starts at the next turn. A job given
	// back after a failure (Retry with an Error) takes a new turn behind
	// its account's jobs waiting then; one given back for later (a
	// RunAt: a retry's backoff, or a job the Pool defers) takes its new
	// turn when its run-at comes by the driver's clock (at once when the
	// caller's clock, behind it, asked for a time already past), behind
	// its account's jobs waiting at that moment, so that an account's
	// retries cost its own turns and jobs coming due together never jump
	// ahead of the other accounts; one handed back at once without an
	// error (a shutdown, an outage) and a rescued one keep their place.
	// An account that joins (its first jobs, or new ones after all of its
	// jobs were handed out) starts at the queue's position, the latest
	// turn handed out, which never goes back: it saves up no turns while
	// it has nothing waiting, and no job waiting for a later run-at makes
	// a newcomer jump ahead. A driver that spreads accounts over shards
	// may take turns shard by shard, each shard's share of a lease in
	// proportion to its accounts with jobs ready. Leases are returned in
	// the order given.
	Lease(ctx context.Context, p LeaseParams) ([]Lease, error)

	// Heartbeat extends a lease held by p.Token and returns its new expiry.
	// A token that no longer holds the job: [jobtype.ErrLeaseLost]. Unknown job:
	// [jobtype.ErrNotFound].
	Heartbeat(ctx context.Context, p HeartbeatParams) (time.Time, error)

	// Complete stores the result and marks the job completed, refunds
	// p.Refund and appends p.Event, all in one atomic step, if and only if
	// p.Token still holds the job; otherwise it changes nothing and returns
	// [jobtype.ErrLeaseLost] (unknown job: [jobtype.ErrNotFound]).
	Complete(ctx context.Context, p CompleteParams) error

	// Retry makes a leased job available again at p.RunAt, if p.Token still
	// holds it ([jobtype.ErrLeaseLost] otherwise).
	Retry(ctx context.Context, p RetryParams) error

	// RescueExpired makes every job whose lease has expired available
	// again, counting a failed attempt, and returns how many it rescued.
	// Each rescue is a compare-and-set on the job's state and token: a job
	// completed or re-leased meanwhile is left alone.
	RescueExpired(ctx context.Context, p RescueParams) (int, error)

	// Get returns the job with the id if it belongs to account, else
	// [jobtype.ErrNotFound] (a malformed id is also [jobtype.ErrNotFound]).
	Get(ctx context.Context, account, id string) (jobtype.Job, error)

	// Cleanup removes completed jobs per p and returns how many it removed.
	Cleanup(ctx context.Context, p CleanupParams) (int, error)
}

// ChargingDriver is a [Driver] that can charge credits and enqueue a batch in
// one atomic step: afterwards either every job exists and the charge is in
// the ledger, or neither. The [jobs.Queue] uses it when the driver implements it.
//
// EnqueueCharged charges len(p.Emails) credits (reason charge, idempotency
// key p.IdempotencyKey) and enqueues the jobs with Cost 1. Too few credits:
// a *credits.InsufficientError and nothing written. A replayed key: see
// [jobtype.EnqueueChargedParams.IdempotencyKey].
type ChargingDriver interface {
	Driver
	EnqueueCharged(ctx context.Context, p jobtype.EnqueueChargedParams) ([]string, error)
}

// BatchCompleter is implemented by a [Driver] that can complete several
// jobs in one round trip. The [jobs.Pool] uses it, when the driver implements
// it, to complete the jobs its workers finish at about the same time.
//
// CompleteMany returns one error per item of ps, in order, each what
// [Driver.Complete] would return for the item alone: every item is
// completed, with its refund and events, atomically and independently
// of the others (a lost lease on one changes nothing for the rest). An
// implementation may write the items in one transaction; if that
// transaction fails as a whole, it retries them one by one or reports the
// failure for each.
type BatchCompleter interface {
	CompleteMany(ctx context.Context, ps []CompleteParams) []error
}

// BatchDeferrer is a [Driver] that hands several leased jobs back for
// later in one call. DeferMany returns one error per item, in order, each
// what [Driver.Retry] would return for the item alone (each p has a RunAt
// and no Error: no attempt is counted); items are independent of each
// other. The [jobs.Pool] uses it, when the driver implements it, for the jobs
// it defers while an account's share of the slow lane is full, which
// come by the thousand when several accounts' domains never answer.
type BatchDeferrer interface {
	DeferMany(ctx context.Context, ps []RetryParams) []error
}

// StatsDriver is implemented by a [Driver] that can tell the queue's depth.
type StatsDriver interface {
	QueueStats(ctx context.Context) (jobtype.QueueStats, error)
}

// Notifier is implemented by a [Driver] that can tell idle workers about new
// jobs, so that they need not only poll.
type Notifier interface {
	// Subscribe returns a channel that receives a value soon after jobs
	// are enqueued (signals may be coalesced; a signal may also be
	// spurious). The subscription ends, and the channel is no longer sent
	// to, when ctx ends. It may be called concurrently.
	Subscribe(ctx context.Context) (<-chan struct{}, error)
}
