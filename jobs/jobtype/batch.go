package jobtype

import (
	"time"

	"github.com/validmail/validmail/emailcheck"
)

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
