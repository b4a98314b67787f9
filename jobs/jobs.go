package jobs

import (
	"github.com/validmail/validmail/jobs/jobtype"
)

// The types a host and a driver share live in package jobtype, as io/fs's
// do for os; the names below are those types, so that a host needs this
// package alone.

// Errors reported by a [Queue].
var (
	// ErrNotFound reports an unknown job, a job of another account, or a
	// job removed after its retention.
	ErrNotFound = jobtype.ErrNotFound
	// ErrLeaseLost reports a lease token that no longer holds the job.
	ErrLeaseLost = jobtype.ErrLeaseLost
	// ErrEmptyBatch reports an enqueue of no addresses.
	ErrEmptyBatch = jobtype.ErrEmptyBatch
	// ErrBatchReplayed reports, on a driver that cannot charge and
	// enqueue in one step, an idempotency key that was already used for a
	// batch: the credits were not charged again, but the original job ids
	// are not known.
	ErrBatchReplayed = jobtype.ErrBatchReplayed
	// ErrListClosed reports a [ListWriter] used after its Commit or Abort.
	ErrListClosed = jobtype.ErrListClosed
)

// State is a job's state as users see it: [StateActive], then
// [StateCompleted].
type State = jobtype.State

// States.
const (
	// StateActive: accepted and not yet done (waiting, running or waiting
	// for a retry).
	StateActive = jobtype.StateActive
	// StateCompleted: done; the job has a result.
	StateCompleted = jobtype.StateCompleted
)

// Sources of a batch: who submitted it.
const (
	// SourceAPI: submitted through the API. An empty source means the
	// same.
	SourceAPI = jobtype.SourceAPI
	// SourceDashboard: submitted through the dashboard's bulk tool. Its
	// results report meta.source "dashboard".
	SourceDashboard = jobtype.SourceDashboard
)

// DefaultIdempotencyTTL is how long a batch's idempotency key is
// remembered by default ([Config.IdempotencyTTL]).
const DefaultIdempotencyTTL = jobtype.DefaultIdempotencyTTL

// DefaultRetention is how long completed jobs are kept by default
// ([Config.Retention]).
const DefaultRetention = jobtype.DefaultRetention

// Job is one address to validate, as [Queue.Get] returns it.
type Job = jobtype.Job

// EnqueueParams describes a batch for [Queue.EnqueueWith].
type EnqueueParams = jobtype.EnqueueParams

// EnqueueChargedParams describes a batch for [Queue.EnqueueCharged].
type EnqueueChargedParams = jobtype.EnqueueChargedParams

// QueueStats is the queue's depth ([Queue.Stats]).
type QueueStats = jobtype.QueueStats

// Batch is what one enqueue created ([Queue.Batch]).
type Batch = jobtype.Batch

// BatchesParams selects an account's batches ([Queue.Batches]).
type BatchesParams = jobtype.BatchesParams

// BatchJobsParams selects the jobs of a batch ([Queue.BatchJobs]).
type BatchJobsParams = jobtype.BatchJobsParams

// BeginListParams describes a list for [Queue.BeginList].
type BeginListParams = jobtype.BeginListParams

// ListWriter stages one list ([Queue.BeginList]).
type ListWriter = jobtype.ListWriter

// ListRow is one data row of an uploaded list.
type ListRow = jobtype.ListRow

// ListInfo describes a committed list ([Queue.List]).
type ListInfo = jobtype.ListInfo

// ListRowsParams selects rows of a list ([Queue.ListRows]).
type ListRowsParams = jobtype.ListRowsParams

// ListDraft is a list waiting for its owner's confirmation
// ([Queue.ListDrafts]).
type ListDraft = jobtype.ListDraft

// PutListDraftParams describes a draft for [ListDrafts.PutListDraft].
type PutListDraftParams = jobtype.PutListDraftParams
