package pgstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.BatchDriver = (*jobsDriver)(nil)

// batchColumns are the columns scanBatch reads, in order.
const batchColumns = `id, account, source, total, completed, counts, created_at, completed_at, name, coalesce(number, 0)`

// scanBatch reads a row of batchColumns.
func scanBatch(row pgx.Row) (jobtype.Batch, error) {
	var b jobtype.Batch
	var id int64
	var counts map[string]int
	var completed *time.Time
	var name *string
	if err := row.Scan(&id, &b.AccountID, &b.Source, &b.Total, &b.Completed, &counts, &b.CreatedAt, &completed, &name, &b.Number); err != nil {
		return jobtype.Batch{}, err
	}
	if name != nil {
		b.Name = *name
	}
	b.ID = strconv.FormatInt(id, 10)
	b.Counts = make(map[emailcheck.Status]int, len(counts))
	for k, v := range counts {
		b.Counts[emailcheck.Status(k)] = v
	}
	b.State = jobtype.StateActive
	if b.Completed == b.Total {
		b.State = jobtype.StateCompleted
		if completed != nil {
			b.CompletedAt = *completed
		}
	}
	return b, nil
}

// Batch implements [jobsdriver.BatchDriver]: one row of the batches table, whose
// counters the completions keep.
func (s *jobsDriver) Batch(ctx context.Context, accountID, batchID string) (jobtype.Batch, error) {
	n, ok := parseID(batchID)
	if !ok {
		return jobtype.Batch{}, jobtype.ErrNotFound
	}
	b, err := scanBatch(s.pool.QueryRow(ctx, s.sql(`SELECT `+batchColumns+` FROM {schema}.batches
		WHERE id = $1 AND account = $2`), n, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return jobtype.Batch{}, jobtype.ErrNotFound
	}
	if err != nil {
		return jobtype.Batch{}, fail(ctx, "batch", err)
	}
	return b, nil
}

// Batches implements [jobsdriver.BatchDriver] on the (account, id) index.
func (s *jobsDriver) Batches(ctx context.Context, p jobtype.BatchesParams) ([]jobtype.Batch, error) {
	var before *int64
	if p.Before != "" {
		n, ok := parseID(p.Before)
		if !ok {
			return nil, nil
		}
		before = &n
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+batchColumns+` FROM {schema}.batches
		WHERE account = $1 AND ($2::bigint IS NULL OR id < $2)
		ORDER BY id DESC LIMIT $3`), p.AccountID, before, p.Limit)
	if err != nil {
		return nil, fail(ctx, "batches", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobtype.Batch, error) { return scanBatch(r) })
	if err != nil {
		return nil, fail(ctx, "batches", err)
	}
	return out, nil
}

// BatchJobs implements [jobsdriver.BatchDriver].
func (s *jobsDriver) BatchJobs(ctx context.Context, p jobtype.BatchJobsParams) ([]jobtype.Job, error) {
	n, ok := parseID(p.BatchID)
	if !ok {
		return nil, jobtype.ErrNotFound
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
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobsdriver.Lease, error) { return scanJob(r) })
	if err != nil {
		return nil, fail(ctx, "batch jobs", err)
	}
	if len(ls) == 0 {
		if _, err := s.Batch(ctx, p.AccountID, p.BatchID); err != nil {
			return nil, err
		}
	}
	out := make([]jobtype.Job, len(ls))
	for i, l := range ls {
		out[i] = l.Job
	}
	return out, nil
}

var _ jobsdriver.BatchDeleter = (*jobsDriver)(nil)

// DeleteBatch implements [jobsdriver.BatchDeleter]: one transaction removes the
// batch's jobs, then its row (the order completions lock them in, so
// that a completion of one of its jobs waits, then finds nothing), then
// its list and rows.
func (s *jobsDriver) DeleteBatch(ctx context.Context, accountID, batchID string) error {
	n, ok := parseID(batchID)
	if !ok {
		return jobtype.ErrNotFound
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(ctx, "delete batch", err)
	}
	defer rollback(tx)
	// A batch's jobs have ids from its own on.
	if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {schema}.jobs WHERE account = $1 AND batch_id = $2 AND id >= $2`), accountID, n); err != nil {
		return fail(ctx, "delete batch: jobs", err)
	}
	first, last := dayBounds(n, n)
	tag, err := tx.Exec(ctx, s.sqlIDs(`DELETE FROM {schema}.batches
		WHERE id = $1 AND id BETWEEN {first} AND {last} AND account = $2`, first, last), n, accountID)
	if err != nil {
		return fail(ctx, "delete batch", err)
	}
	if tag.RowsAffected() == 0 {
		return jobtype.ErrNotFound
	}
	if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {schema}.list_rows WHERE batch_id = $1`), n); err != nil {
		return fail(ctx, "delete batch: list rows", err)
	}
	if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {schema}.lists WHERE batch_id = $1 AND account = $2`), n, accountID); err != nil {
		return fail(ctx, "delete batch: list", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(ctx, "delete batch", err)
	}
	return nil
}
