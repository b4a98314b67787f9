package jobtype

import (
	"errors"
	"time"

	"github.com/validmail/validmail/emailcheck"
)

// Errors reported by a [jobs.Queue] and by every [jobsdriver.Driver].
var (
	// ErrNotFound reports an unknown job, a job of another account, or a job
	// removed after its retention.
	ErrNotFound = errors.New("jobs: not found")
	// ErrLeaseLost reports a lease token that no longer holds the job: the
	// lease expired and was rescued, or the job is already completed.
	ErrLeaseLost = errors.New("jobs: lease lost")
	// ErrEmptyBatch reports an enqueue of no addresses.
	ErrEmptyBatch = errors.New("jobs: empty batch")
	// ErrBatchReplayed reports, on a driver without [jobsdriver.ChargingDriver], an
	// idempotency key that was already used for a batch: the credits were
	// not charged again, but the original job ids are not known.
	ErrBatchReplayed = errors.New("jobs: batch already enqueued under this idempotency key")
)

// State is a job's state as users see it.
type State string

// States.
const (
	// StateActive: accepted and not yet done (waiting, running or waiting
	// for a retry).
	StateActive State = "active"
	// StateCompleted: done; the job has a result.
	StateCompleted State = "completed"
)

// Sources of a batch: who submitted it.
const (
	// SourceAPI: submitted through the API. An empty source means the
	// same.
	SourceAPI = "api"
	// SourceDashboard: submitted through the dashboard's bulk tool. Its
	// results report meta.source "dashboard".
	SourceDashboard = "dashboard"
)

// DefaultIdempotencyTTL is how long a batch's idempotency key is
// remembered by default.
const DefaultIdempotencyTTL = 24 * time.Hour

// DefaultRetention is how long completed jobs are kept by default.
const DefaultRetention = 7 * 24 * time.Hour

// Job is one address to validate.
type Job struct {
	// ID is numeric text, unique in the deployment and increasing within
	// its account.
	ID string
	// AccountID owns the job.
	AccountID string
	// Email is the address to validate.
	Email string
	// State is [StateActive] or [StateCompleted].
	State State
	// Result is nil while the job is active.
	Result *emailcheck.Result
	// Cost is the number of credits charged for the job at enqueue (0 or
	// 1); it is what an UNKNOWN result refunds.
	Cost int64
	// Errors counts failed attempts: retries with an error and rescued
	// leases.
	Errors int
	// LastError is the message of the latest failed attempt.
	LastError string
	// Unjudged counts the attempts in a row, up to the latest failed
	// one, that came back without a verdict of the DNS on the job's
	// domain (see [jobs.PoolConfig.UnknownAttempts]); 0 when the latest
	// failure was of another kind (a rescued lease, a validation error).
	// [Job.Errors] counts every kind of failure together; this count is
	// kept apart so that rescued leases and failed validations do not
	// use up the attempts an unjudged verdict is allowed.
	Unjudged int
	// BatchID is the batch the job belongs to: the id of the first job of
	// the enqueue that created it. Empty from a driver without
	// [jobsdriver.BatchDriver].
	BatchID string
	// Source is the source of the job's batch: [SourceAPI] (or empty) or
	// [SourceDashboard].
	Source string
	// CreatedAt is when the job was enqueued.
	CreatedAt time.Time
	// CompletedAt is when the job completed; zero while active.
	CompletedAt time.Time
}

// EnqueueParams describes a batch for [jobsdriver.Driver.Enqueue].
type EnqueueParams struct {
	// AccountID owns the jobs; required.
	AccountID string
	// Emails holds one address per job, in order; at least one.
	Emails []string
	// Cost is the credits each job was charged, recorded in [Job.Cost].
	Cost int64
	// Source is recorded as the batch's and its jobs' source; empty means
	// [SourceAPI].
	Source string
}

// EnqueueChargedParams describes a batch for [jobsdriver.ChargingDriver.EnqueueCharged]
// and [jobs.Queue.EnqueueCharged]: one credit is charged per address.
type EnqueueChargedParams struct {
	// AccountID owns the jobs and pays for them; required.
	AccountID string
	// Emails holds one address per job, in order; at least one.
	Emails []string
	// IdempotencyKey, when set, makes the batch apply once per account:
	// a repeat with as many addresses returns the original ids without
	// charging or enqueueing; a repeat with another count fails with
	// credits.ErrIdempotencyConflict.
	IdempotencyKey string
	// Fingerprint identifies the batch's content (for example the hex
	// SHA-256 of the canonical request body). When set with
	// IdempotencyKey, the driver stores it with the key, and a repeat of
	// the key with another fingerprint fails with
	// credits.ErrIdempotencyConflict even when the count is the same.
	Fingerprint string
	// IdempotencyTTL is how long the key is remembered: after it, the key
	// names nothing and may start a new batch, and the driver may remove
	// its record. Zero means [DefaultIdempotencyTTL].
	IdempotencyTTL time.Duration
	// Source is recorded as the batch's and its jobs' source; empty means
	// [SourceAPI].
	Source string
}

// QueueStats is the queue's depth, for an operator's metrics.
type QueueStats struct {
	// Available jobs wait for a worker now; Delayed ones wait for a later
	// run-at (a retry); Running ones are leased.
	Available, Delayed, Running int
	// OldestActive is when the oldest job not yet completed was created;
	// zero when there is none.
	OldestActive time.Time
}
