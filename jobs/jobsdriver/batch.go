package jobsdriver

import (
	"context"

	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

// BatchCompleted returns the data of the batch.completed event that
// reports b: its id, total and counts.
func BatchCompleted(b jobtype.Batch) webhook.BatchCompleted {
	counts := make(map[string]int, len(b.Counts))
	for k, n := range b.Counts {
		counts[string(k)] = n
	}
	return webhook.BatchCompleted{BatchID: b.ID, Total: b.Total, Counts: counts}
}

// BatchDriver is implemented by drivers that keep batches: every job
// belongs to the batch its enqueue created. It may be called
// concurrently; another account's batch is [jobtype.ErrNotFound], like an unknown
// one or one whose jobs were removed after the retention.
type BatchDriver interface {
	Batch(ctx context.Context, accountID, batchID string) (jobtype.Batch, error)
	Batches(ctx context.Context, p jobtype.BatchesParams) ([]jobtype.Batch, error)
	BatchJobs(ctx context.Context, p jobtype.BatchJobsParams) ([]jobtype.Job, error)
}

// BatchDeleter is implemented by drivers that can erase a batch at once,
// for a customer who wants their data gone before the retention.
//
// DeleteBatch removes the account's batch, its jobs whatever their state,
// with their results, and, for a list, its rows, so that from its return
// the batch, its jobs and its rows are [jobtype.ErrNotFound] to every read
// (Batch, BatchJobs, Get, List, ListRows) and its jobs are never leased
// again; a worker holding one of its jobs then gets [jobtype.ErrNotFound] or
// [jobtype.ErrLeaseLost] from Complete, Retry and Heartbeat and changes nothing.
// Another account's batch and an unknown one are [jobtype.ErrNotFound]. It keeps
// the ledger's entries (charges stay charged), the usage counts, an
// idempotency key's record (a replay answers the same ids, now unknown)
// and webhook events already written. A driver may finish removing a
// large list's rows in the background ([Driver.Cleanup]) after the
// batch is unreadable.
type BatchDeleter interface {
	DeleteBatch(ctx context.Context, accountID, batchID string) error
}
