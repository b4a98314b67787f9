package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/emailcheck"
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

// BatchEvent describes the event a batch's last completion writes (see
// [CompleteParams.BatchEvent]). The driver stores it as one pending outbox
// entry of the job's account, with the completing job's id, due at
// CreatedAt.
type BatchEvent struct {
	// ID identifies the event in the outbox.
	ID string
	// Type names the kind of event, such as "batch.completed".
	Type string
	// CreatedAt is the event's timestamp and when it is first due;
	// required.
	CreatedAt time.Time
}

// batchTimestamp is RFC 3339 in UTC with milliseconds, as webhook events
// carry it.
const batchTimestamp = "2006-01-02T15:04:05.000Z07:00"

// BatchEventHead returns the start of e's payload, up to the data object:
//
//	{"type":"<Type>","timestamp":"<CreatedAt>","data":
//
// Drivers that build the payload inside the backend append the data object
// as [BatchEventPayload] describes.
func BatchEventHead(e BatchEvent) string {
	t, _ := json.Marshal(e.Type)
	return `{"type":` + string(t) + `,"timestamp":"` + e.CreatedAt.UTC().Format(batchTimestamp) + `","data":`
}

// BatchEventPayload returns the payload written for e when batch b
// completes, byte for byte:
//
//	{"type":"batch.completed","timestamp":"…","data":{"batch_id":"…","total":n,"counts":{"LIKELY":n,…}}}
//
// with counts' keys in byte order and no spaces. Every driver writes
// exactly these bytes.
func BatchEventPayload(e BatchEvent, b Batch) []byte {
	keys := slices.Sorted(maps.Keys(b.Counts))
	var sb strings.Builder
	sb.WriteString(BatchEventHead(e))
	sb.WriteString(`{"batch_id":"` + b.ID + `","total":` + strconv.Itoa(b.Total) + `,"counts":{`)
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"` + string(k) + `":` + strconv.Itoa(b.Counts[k]))
	}
	sb.WriteString(`}}}`)
	return []byte(sb.String())
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
