package jobtype

import (
	"context"
	"errors"
	"time"
)

// ErrListClosed reports a [ListWriter] used after its Commit or Abort.
var ErrListClosed = errors.New("jobs: list already committed or aborted")

// ListRow is one data row of an uploaded list (the header excluded).
type ListRow struct {
	// N numbers the list's rows from 0, in upload order.
	N int
	// Record holds the row's fields as uploaded.
	Record []string
	// Email is the row's address cell, trimmed: the address validated for
	// the first row of its Key.
	Email string
	// Key is the row's address trimmed and case-folded; rows with the same
	// Key share one job. Empty for a row that is not an address: it gets no
	// job and costs nothing.
	Key string
	// Job, in rows read back ([jobsdriver.ListDriver.ListRows]), is the job of the
	// row's address; nil for a row that is not an address, and for one
	// whose job was removed after the retention.
	Job *Job
}

// BeginListParams describes a list for [jobsdriver.ListDriver.BeginList].
type BeginListParams struct {
	// AccountID owns the list and pays for it; required.
	AccountID string
	// Name is the list's (and its batch's) name, such as the uploaded
	// file's; optional.
	Name string
	// Header holds the names of the uploaded columns.
	Header []string
	// Column is the index in Header of the address column.
	Column int
	// Rows is the number of rows the writer will be given: an upper bound
	// of the list's unique addresses, which a driver may use to reserve
	// job ids.
	Rows int
	// Charge, when true, makes Commit charge one credit per unique
	// address (the jobs' Cost is then 1); when false nothing is charged.
	Charge bool
	// Free, with Charge, is how many of the unique addresses (the first
	// ones, in upload order) cost nothing, such as what is left of a
	// console's free allowance: they are not charged and their jobs'
	// Cost is 0.
	Free int
	// Source is recorded as the batch's and its jobs' source; empty means
	// [SourceAPI].
	Source string
	// IdempotencyKey, when set, makes the list apply once per account:
	// the Commit of a list whose key names an earlier list, unexpired,
	// with the same Fingerprint discards what was staged, charges nothing
	// and returns the earlier list's description (Replayed set); with
	// another Fingerprint it fails with credits.ErrIdempotencyConflict.
	// Concurrent commits under one key make one batch. Drivers keep the
	// key in the store beside the batches' keys
	// ([EnqueueChargedParams.IdempotencyKey]): callers keep the two
	// apart (the API prefixes them "batch:" and "list:").
	IdempotencyKey string
	// Fingerprint identifies the list's content, such as the hex SHA-256
	// of the uploaded file and its options.
	Fingerprint string
	// IdempotencyTTL is how long the key is remembered; zero means the
	// queue's ([jobs.Config.IdempotencyTTL]).
	IdempotencyTTL time.Duration
}

// ListInfo describes a committed list. Its batch ([Batch]) has one job per
// unique address.
type ListInfo struct {
	// BatchID is the list's batch.
	BatchID string
	// AccountID owns the list.
	AccountID string
	// Name is the list's name; may be empty.
	Name string
	// Header holds the names of the uploaded columns; Column is the index
	// of the address column.
	Header []string
	Column int
	// Rows counts the list's data rows; Addresses its unique addresses
	// (its jobs); Duplicates the rows whose address an earlier row had;
	// InvalidRows the rows that are not addresses. Rows = Addresses +
	// Duplicates + InvalidRows.
	Rows, Addresses, Duplicates, InvalidRows int
	// Charged is the credits the list cost: its unique addresses less the
	// free ones ([BeginListParams.Free]), or 0 when not charged.
	Charged int64
	// Replayed, set by [ListWriter.Commit] alone, reports that the list's
	// idempotency key named this earlier list: nothing was charged or
	// created now.
	Replayed bool
}

// ListRowsParams selects rows of a list, in upload order.
type ListRowsParams struct {
	AccountID, BatchID string
	// After, when not negative, returns only rows numbered above it; -1
	// starts at the first row.
	After int
	// Limit is the most rows to return; at least 1.
	Limit int
}

// ListWriter stages one list. Nothing it stages is visible (no batch, no
// job a worker can lease, no charge) until Commit; Abort, or a crash of
// the writing process, leaves nothing behind but what the driver removes
// on its own (see the driver's documentation).
type ListWriter interface {
	// Append stages rows, numbered consecutively from 0 across calls.
	Append(ctx context.Context, rows []ListRow) error
	// Commit charges the list's unique addresses (when asked), creates its
	// batch with one job per unique address and makes it visible, in one
	// atomic step, and returns the list's description. Too few credits: a
	// *credits.InsufficientError and nothing kept. A list without any
	// address: [ErrEmptyBatch] and nothing kept. After Commit, whatever it
	// returned, the writer is closed.
	Commit(ctx context.Context) (ListInfo, error)
	// Abort discards what was staged. It is safe after Commit (and does
	// nothing then) and may be called more than once.
	Abort(ctx context.Context) error
}
