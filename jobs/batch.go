package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/webhook"
)

// ErrNoBatches reports a driver that does not implement [BatchDriver].
var ErrNoBatches = errors.New("jobs: the driver keeps no batches")

// Batch is what one enqueue created: its jobs, followed as one. Its id is
// the id of its first job, so it is numeric text, unique in the
// deployment and increasing.
type Batch struct {
	// ID is the id of the batch's first job.
	ID string
	// AccountID owns the batch.
	AccountID string
	// State is [StateCompleted] once every job is, [StateActive] before.
	State State
	// CreatedAt is when the batch was enqueued.
	CreatedAt time.Time
	// CompletedAt is when its last job completed; zero while active.
	CompletedAt time.Time
	// Total is the number of jobs; Completed how many are done.
	Total, Completed int
	// Counts holds, for every status that occurs, how many results have
	// it.
	Counts map[emailcheck.Status]int
	// Source is who submitted the batch: [SourceAPI] or [SourceDashboard].
	Source string
	// Name is the batch's name (a list's, such as its file's); empty for
	// a batch without one.
	Name string
	// Number counts the account's batches: 1 for its first, and so on,
	// so that a customer sees "Batch 3" rather than a deployment-wide id.
	// 0 from a driver that does not number them.
	Number int64
}

// BatchCompleted returns the data of the batch.completed event that
// reports b: its id, total and counts.
func BatchCompleted(b Batch) webhook.BatchCompleted {
	counts := make(map[string]int, len(b.Counts))
	for k, n := range b.Counts {
		counts[string(k)] = n
	}
	return webhook.BatchCompleted{BatchID: b.ID, Total: b.Total, Counts: counts}
}

// BatchesParams selects an account's batches, newest first.
type BatchesParams struct {
	AccountID string
	// Limit is the most batches to return; at least 1.
	Limit int
	// Before, when set, returns only batches older than the batch with
	// this id (the last of the previous page).
	Before string
}

// BatchJobsParams selects the jobs of a batch, in submission order.
type BatchJobsParams struct {
	AccountID, BatchID string
	// Limit is the most jobs to return; at least 1.
	Limit int
	// After, when set, returns only jobs after the job with this id (the
	// last of the previous page).
	After string
}

// BatchDriver is implemented by drivers that keep batches: every job
// belongs to the batch its enqueue created. It may be called
// concurrently; another account's batch is [ErrNotFound], like an unknown
// one or one whose jobs were removed after the retention.
type BatchDriver interface {
	Batch(ctx context.Context, accountID, batchID string) (Batch, error)
	Batches(ctx context.Context, p BatchesParams) ([]Batch, error)
	BatchJobs(ctx context.Context, p BatchJobsParams) ([]Job, error)
}

// Batch returns the account's batch with the id.
func (q *Queue) Batch(ctx context.Context, accountID, batchID string) (Batch, error) {
	bd, ok := q.driver.(BatchDriver)
	if !ok {
		return Batch{}, ErrNoBatches
	}
	return bd.Batch(ctx, accountID, batchID)
}

// Batches returns the account's batches, newest first.
func (q *Queue) Batches(ctx context.Context, p BatchesParams) ([]Batch, error) {
	bd, ok := q.driver.(BatchDriver)
	if !ok {
		return nil, ErrNoBatches
	}
	if p.Limit < 1 {
		return nil, errors.New("jobs: Batches needs a positive limit")
	}
	return bd.Batches(ctx, p)
}

// BatchJobs returns a page of a batch's jobs, in submission order.
func (q *Queue) BatchJobs(ctx context.Context, p BatchJobsParams) ([]Job, error) {
	bd, ok := q.driver.(BatchDriver)
	if !ok {
		return nil, ErrNoBatches
	}
	if p.Limit < 1 {
		return nil, errors.New("jobs: BatchJobs needs a positive limit")
	}
	return bd.BatchJobs(ctx, p)
}

// ErrNoDelete reports a driver that cannot erase batches.
var ErrNoDelete = errors.New("jobs: the driver cannot delete batches")

// BatchDeleter is implemented by drivers that can erase a batch at once,
// for a customer who wants their data gone before the retention.
//
// DeleteBatch removes the account's batch, its jobs whatever their state,
// with their results, and, for a list, its rows, so that from its return
// the batch, its jobs and its rows are [ErrNotFound] to every read
// (Batch, BatchJobs, Get, List, ListRows) and its jobs are never leased
// again; a worker holding one of its jobs then gets [ErrNotFound] or
// [ErrLeaseLost] from Complete, Retry and Heartbeat and changes nothing.
// Another account's batch and an unknown one are [ErrNotFound]. It keeps
// the ledger's entries (charges stay charged), the usage counts, an
// idempotency key's record (a replay answers the same ids, now unknown)
// and webhook events already written. A driver may finish removing a
// large list's rows in the background ([Driver.Cleanup]) after the
// batch is unreadable.
type BatchDeleter interface {
	DeleteBatch(ctx context.Context, accountID, batchID string) error
}

// DeleteBatch erases the account's batch, its jobs, results and rows
// (see [BatchDeleter]); [ErrNoDelete] when the driver cannot.
func (q *Queue) DeleteBatch(ctx context.Context, accountID, batchID string) error {
	bd, ok := q.driver.(BatchDeleter)
	if !ok {
		return ErrNoDelete
	}
	return bd.DeleteBatch(ctx, accountID, batchID)
}
