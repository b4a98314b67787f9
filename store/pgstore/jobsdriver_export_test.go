package pgstore

// The queue's methods on the Store, for this package's tests alone: the
// Store hands its queue to hosts as its Backend's Jobs.

import (
	"context"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

func (s *Store) Batch(ctx context.Context, accountID string, batchID string) (jobtype.Batch, error) {
	return (&jobsDriver{s}).Batch(ctx, accountID, batchID)
}

func (s *Store) Batches(ctx context.Context, p jobtype.BatchesParams) ([]jobtype.Batch, error) {
	return (&jobsDriver{s}).Batches(ctx, p)
}

func (s *Store) BatchJobs(ctx context.Context, p jobtype.BatchJobsParams) ([]jobtype.Job, error) {
	return (&jobsDriver{s}).BatchJobs(ctx, p)
}

func (s *Store) DeleteBatch(ctx context.Context, accountID string, batchID string) error {
	return (&jobsDriver{s}).DeleteBatch(ctx, accountID, batchID)
}

func (s *Store) PutListDraftChunk(ctx context.Context, id string, n int, data []byte, expiresAt time.Time) error {
	return (&jobsDriver{s}).PutListDraftChunk(ctx, id, n, data, expiresAt)
}

func (s *Store) PutListDraft(ctx context.Context, p jobtype.PutListDraftParams) (bool, error) {
	return (&jobsDriver{s}).PutListDraft(ctx, p)
}

func (s *Store) ListDraft(ctx context.Context, accountID string, id string) (jobtype.ListDraft, error) {
	return (&jobsDriver{s}).ListDraft(ctx, accountID, id)
}

func (s *Store) ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error) {
	return (&jobsDriver{s}).ListDraftChunk(ctx, id, n)
}

func (s *Store) TakeListDraft(ctx context.Context, accountID string, id string) (jobtype.ListDraft, error) {
	return (&jobsDriver{s}).TakeListDraft(ctx, accountID, id)
}

func (s *Store) DeleteListDraft(ctx context.Context, id string) error {
	return (&jobsDriver{s}).DeleteListDraft(ctx, id)
}

func (s *Store) Enqueue(ctx context.Context, p jobtype.EnqueueParams) ([]string, error) {
	return (&jobsDriver{s}).Enqueue(ctx, p)
}

func (s *Store) EnqueueCharged(ctx context.Context, p jobtype.EnqueueChargedParams) ([]string, error) {
	return (&jobsDriver{s}).EnqueueCharged(ctx, p)
}

func (s *Store) Lease(ctx context.Context, p jobsdriver.LeaseParams) ([]jobsdriver.Lease, error) {
	return (&jobsDriver{s}).Lease(ctx, p)
}

func (s *Store) Heartbeat(ctx context.Context, p jobsdriver.HeartbeatParams) (time.Time, error) {
	return (&jobsDriver{s}).Heartbeat(ctx, p)
}

func (s *Store) Complete(ctx context.Context, p jobsdriver.CompleteParams) error {
	return (&jobsDriver{s}).Complete(ctx, p)
}

func (s *Store) CompleteMany(ctx context.Context, ps []jobsdriver.CompleteParams) []error {
	return (&jobsDriver{s}).CompleteMany(ctx, ps)
}

func (s *Store) Retry(ctx context.Context, p jobsdriver.RetryParams) error {
	return (&jobsDriver{s}).Retry(ctx, p)
}

func (s *Store) RescueExpired(ctx context.Context, p jobsdriver.RescueParams) (int, error) {
	return (&jobsDriver{s}).RescueExpired(ctx, p)
}

func (s *Store) Get(ctx context.Context, account string, id string) (jobtype.Job, error) {
	return (&jobsDriver{s}).Get(ctx, account, id)
}

func (s *Store) Cleanup(ctx context.Context, p jobsdriver.CleanupParams) (int, error) {
	return (&jobsDriver{s}).Cleanup(ctx, p)
}

func (s *Store) CleanupGranularity() time.Duration {
	return (&jobsDriver{s}).CleanupGranularity()
}

func (s *Store) DeferMany(ctx context.Context, ps []jobsdriver.RetryParams) []error {
	return (&jobsDriver{s}).DeferMany(ctx, ps)
}

func (s *Store) BeginList(ctx context.Context, p jobtype.BeginListParams) (jobtype.ListWriter, error) {
	return (&jobsDriver{s}).BeginList(ctx, p)
}

func (s *Store) List(ctx context.Context, accountID string, batchID string) (jobtype.ListInfo, error) {
	return (&jobsDriver{s}).List(ctx, accountID, batchID)
}

func (s *Store) ListRows(ctx context.Context, p jobtype.ListRowsParams) ([]jobtype.ListRow, error) {
	return (&jobsDriver{s}).ListRows(ctx, p)
}

func (s *Store) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	return (&jobsDriver{s}).Subscribe(ctx)
}

func (s *Store) QueueStats(ctx context.Context) (jobtype.QueueStats, error) {
	return (&jobsDriver{s}).QueueStats(ctx)
}
