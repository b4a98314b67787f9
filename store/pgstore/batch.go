package pgstore

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
)

var _ jobs.BatchDriver = (*Store)(nil)

// Batch implements [jobs.BatchDriver]: one aggregate over the batch's jobs,
// grouped by status, on the (account, batch_id, id) index.
func (s *Store) Batch(ctx context.Context, accountID, batchID string) (jobs.Batch, error) {
	n, ok := parseID(batchID)
	if !ok {
		return jobs.Batch{}, jobs.ErrNotFound
	}
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT result->'confidence'->>'status', count(*), min(created_at), max(completed_at)
		FROM {schema}.jobs WHERE account = $1 AND batch_id = $2
		GROUP BY 1`), accountID, n)
	if err != nil {
		return jobs.Batch{}, fail(ctx, "batch", err)
	}
	b := jobs.Batch{ID: batchID, AccountID: accountID, Counts: map[emailcheck.Status]int{}}
	var status *string
	var count int
	var created time.Time
	var completed *time.Time
	_, err = pgx.ForEachRow(rows, []any{&status, &count, &created, &completed}, func() error {
		b.Total += count
		if b.CreatedAt.IsZero() || created.Before(b.CreatedAt) {
			b.CreatedAt = created
		}
		if status != nil {
			b.Completed += count
			b.Counts[emailcheck.Status(*status)] += count
			if completed != nil && completed.After(b.CompletedAt) {
				b.CompletedAt = *completed
			}
		}
		return nil
	})
	if err != nil {
		return jobs.Batch{}, fail(ctx, "batch", err)
	}
	if b.Total == 0 {
		return jobs.Batch{}, jobs.ErrNotFound
	}
	b.State = jobs.StateActive
	if b.Completed == b.Total {
		b.State = jobs.StateCompleted
	} else {
		b.CompletedAt = time.Time{}
	}
	return b, nil
}

// Batches implements [jobs.BatchDriver].
func (s *Store) Batches(ctx context.Context, p jobs.BatchesParams) ([]jobs.Batch, error) {
	var before *int64
	if p.Before != "" {
		n, ok := parseID(p.Before)
		if !ok {
			return nil, nil
		}
		before = &n
	}
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT DISTINCT batch_id FROM {schema}.jobs
		WHERE account = $1 AND ($2::bigint IS NULL OR batch_id < $2)
		ORDER BY batch_id DESC LIMIT $3`), p.AccountID, before, p.Limit)
	if err != nil {
		return nil, fail(ctx, "batches", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fail(ctx, "batches", err)
	}
	out := make([]jobs.Batch, 0, len(ids))
	for _, id := range ids {
		b, err := s.Batch(ctx, p.AccountID, strconv.FormatInt(id, 10))
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, b)
	}
	return out, nil
}

// BatchJobs implements [jobs.BatchDriver].
func (s *Store) BatchJobs(ctx context.Context, p jobs.BatchJobsParams) ([]jobs.Job, error) {
	n, ok := parseID(p.BatchID)
	if !ok {
		return nil, jobs.ErrNotFound
	}
	after := int64(0)
	if p.After != "" {
		if after, ok = parseID(p.After); !ok {
			return nil, nil
		}
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+jobColumns+` FROM {schema}.jobs
		WHERE account = $1 AND batch_id = $2 AND id > $3 ORDER BY id LIMIT $4`), p.AccountID, n, after, p.Limit)
	if err != nil {
		return nil, fail(ctx, "batch jobs", err)
	}
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobs.Lease, error) { return scanJob(r) })
	if err != nil {
		return nil, fail(ctx, "batch jobs", err)
	}
	if len(ls) == 0 && after == 0 {
		return nil, jobs.ErrNotFound
	}
	out := make([]jobs.Job, len(ls))
	for i, l := range ls {
		out[i] = l.Job
	}
	return out, nil
}
