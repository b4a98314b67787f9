package jobs

import (
	"context"
	"errors"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

// ErrNoBatches reports a driver that does not implement [jobsdriver.BatchDriver].
var ErrNoBatches = errors.New("jobs: the driver keeps no batches")

// Batch returns the account's batch with the id.
func (q *Queue) Batch(ctx context.Context, accountID, batchID string) (Batch, error) {
	bd, ok := q.driver.(jobsdriver.BatchDriver)
	if !ok {
		return Batch{}, ErrNoBatches
	}
	return bd.Batch(ctx, accountID, batchID)
}

// Batches returns the account's batches, newest first.
func (q *Queue) Batches(ctx context.Context, p BatchesParams) ([]Batch, error) {
	bd, ok := q.driver.(jobsdriver.BatchDriver)
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
	bd, ok := q.driver.(jobsdriver.BatchDriver)
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

// DeleteBatch erases the account's batch, its jobs, results and rows
// (see [jobsdriver.BatchDeleter]); [ErrNoDelete] when the driver cannot.
func (q *Queue) DeleteBatch(ctx context.Context, accountID, batchID string) error {
	bd, ok := q.driver.(jobsdriver.BatchDeleter)
	if !ok {
		return ErrNoDelete
	}
	return bd.DeleteBatch(ctx, accountID, batchID)
}
