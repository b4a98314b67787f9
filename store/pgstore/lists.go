package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.ListDriver = (*jobsDriver)(nil)

// listWriter stages a list inside one transaction: the rows go to a
// temporary table, and Commit turns them into jobs, rows, the batch, the
// list and the charge before committing. Until then nothing is visible to
// anyone, and a crash of the process (or of its connection) rolls the
// whole list back: there is nothing to clean up.
type listWriter struct {
	s       *Store
	tx      pgx.Tx
	p       jobtype.BeginListParams
	batchID int64
	closed  bool
}

// BeginList implements [jobsdriver.ListDriver]: it opens the list's
// transaction, takes the batch's id (all of the transaction's ids share
// its day, as now() is the transaction's start) and makes the staging
// table.
func (s *jobsDriver) BeginList(ctx context.Context, p jobtype.BeginListParams) (jobtype.ListWriter, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fail(ctx, "begin list", err)
	}
	w := &listWriter{s: s.Store, tx: tx, p: p}
	err = tx.QueryRow(ctx, s.sql(`SELECT {schema}.next_job_id()`)).Scan(&w.batchID)
	if err == nil {
		_, err = tx.Exec(ctx, `CREATE TEMP TABLE validmail_list_stage (n integer, record text[], email text, key text) ON COMMIT DROP`)
	}
	if err != nil {
		rollback(tx)
		return nil, fail(ctx, "begin list", err)
	}
	return w, nil
}

// Append implements [jobtype.ListWriter] with COPY into the staging table.
func (w *listWriter) Append(ctx context.Context, rows []jobtype.ListRow) error {
	if w.closed {
		return jobtype.ErrListClosed
	}
	src := make([][]any, len(rows))
	for i, r := range rows {
		var key, email *string
		if r.Key != "" {
			key, email = &rows[i].Key, &rows[i].Email
		}
		src[i] = []any{int32(r.N), r.Record, email, key}
	}
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{"validmail_list_stage"}, []string{"n", "record", "email", "key"}, pgx.CopyFromRows(src))
	return fail(ctx, "list rows", err)
}

// listKeysSQL counts the list's unique keys: the jobs it makes.
const listKeysSQL = `SELECT count(DISTINCT key) FROM pg_temp.validmail_list_stage WHERE key IS NOT NULL`

// reserveTurnsSQL gives $2 consecutive turns to new jobs of account $1
// and returns the turn before the first: the later of the account's last
// turn and the queue's position, as an enqueue's turns are. It runs on its
// own, committed at once, so that a list's long commit never holds the
// account's row of job_turns (which its batches, retries and promotions
// take too); a list that fails after it leaves the turns unused.
const reserveTurnsSQL = `
	WITH ` + turnsCTE + `
	INSERT INTO {schema}.job_turns AS jt (account, last_turn)
	SELECT $1, position.turn + $2::bigint FROM position
	ON CONFLICT (account) DO UPDATE
	SET last_turn = greatest(jt.last_turn, EXCLUDED.last_turn - $2::bigint) + $2::bigint
	RETURNING last_turn - $2::bigint`

// commitListSQL makes one job per unique key (the first row's address,
// ids and turns from $6 on in the order of the first rows) and the list's
// rows pointing at them, and counts them.
const commitListSQL = `
	WITH u AS MATERIALIZED (
		SELECT {schema}.next_job_id() AS id, d.key, d.email, row_number() OVER (ORDER BY d.n) AS k
		FROM (SELECT DISTINCT ON (key) key, email, n FROM pg_temp.validmail_list_stage
		      WHERE key IS NOT NULL ORDER BY key, n) AS d
		ORDER BY d.n
	), ins AS (
		INSERT INTO {schema}.jobs (id, account, email, cost, batch_id, source, turn)
		SELECT id, $1, email, CASE WHEN k <= $5 THEN 0 ELSE $2 END, $3, $4::text, $6::bigint + k
		FROM u ORDER BY id
	), rws AS (
		INSERT INTO {schema}.list_rows (batch_id, n, record, job_id)
		SELECT $3, s.n, s.record, u.id FROM pg_temp.validmail_list_stage s LEFT JOIN u ON u.key = s.key
	)
	SELECT (SELECT count(*) FROM u),
	       (SELECT count(*) FROM pg_temp.validmail_list_stage),
	       (SELECT count(*) FROM pg_temp.validmail_list_stage WHERE key IS NULL)`

// Commit implements [jobtype.ListWriter]: jobs, rows, charge, batch and list
// are written by the list's transaction, which commits them together.
func (w *listWriter) Commit(ctx context.Context) (jobtype.ListInfo, error) {
	if w.closed {
		return jobtype.ListInfo{}, jobtype.ErrListClosed
	}
	w.closed = true
	defer rollback(w.tx)
	s, p := w.s, w.p
	cost := int64(0)
	if p.Charge {
		cost = 1
	}
	if p.IdempotencyKey != "" {
		if info, replayed, err := s.takeListKey(ctx, w.tx, p, w.batchID); replayed || err != nil {
			return info, err
		}
	}
	var keys int64
	if err := w.tx.QueryRow(ctx, listKeysSQL).Scan(&keys); err != nil {
		return jobtype.ListInfo{}, fail(ctx, "commit list", err)
	}
	if keys == 0 {
		return jobtype.ListInfo{}, jobtype.ErrEmptyBatch
	}
	var start int64
	if err := s.pool.QueryRow(ctx, s.sql(reserveTurnsSQL), p.AccountID, keys).Scan(&start); err != nil {
		return jobtype.ListInfo{}, fail(ctx, "commit list: turns", err)
	}
	var unique, rows, junk int
	err := w.tx.QueryRow(ctx, s.sql(commitListSQL), p.AccountID, cost, w.batchID, sourceArg(p.Source), int64(p.Free), start).Scan(&unique, &rows, &junk)
	if err != nil {
		return jobtype.ListInfo{}, fail(ctx, "commit list", err)
	}
	if unique == 0 {
		return jobtype.ListInfo{}, jobtype.ErrEmptyBatch
	}
	batch := strconv.FormatInt(w.batchID, 10)
	charged := int64(0)
	if p.Charge && unique > p.Free {
		charged = int64(unique - p.Free)
		if err := s.addBalance(ctx, w.tx, p.AccountID, -charged); err != nil {
			return jobtype.ListInfo{}, err
		}
		_, err = w.tx.Exec(ctx, s.sql(`
			INSERT INTO {schema}.credit_entries (account, delta, reason, reference) VALUES ($1, $2, $3, $4)`),
			p.AccountID, -charged, string(credits.ReasonCharge), "list:"+batch)
		if err != nil {
			return jobtype.ListInfo{}, fail(ctx, "commit list: charge", err)
		}
	}
	var name *string
	if p.Name != "" {
		name = &p.Name
	}
	info := jobtype.ListInfo{
		BatchID: batch, AccountID: p.AccountID, Name: p.Name, Header: p.Header, Column: p.Column,
		Rows: rows, Addresses: unique, Duplicates: rows - unique - junk, InvalidRows: junk, Charged: charged,
	}
	header := p.Header
	if header == nil {
		header = []string{}
	}
	_, err = w.tx.Exec(ctx, s.sql(`
		WITH b AS (
			INSERT INTO {schema}.batches (id, account, source, total, created_at, name)
			VALUES ($1, $2, coalesce($3::text, 'api'), $4, now(), $5)
		)
		INSERT INTO {schema}.lists (batch_id, account, header, col, rows, addresses, duplicates, invalid_rows, charged)
		VALUES ($1, $2, $6, $7, $8, $4, $9, $10, $11)`),
		w.batchID, p.AccountID, sourceArg(p.Source), unique, name, header, p.Column, rows, info.Duplicates, junk, charged)
	if err != nil {
		return jobtype.ListInfo{}, fail(ctx, "commit list: batch", err)
	}
	if err := w.tx.Commit(ctx); err != nil {
		return jobtype.ListInfo{}, fail(ctx, "commit list: commit", err)
	}
	if unique >= analyzeAfterList {
		s.analyzeJobsOfDay(ctx, w.batchID)
	}
	return info, nil
}

// takeListKey records the list's idempotency key in its transaction, as
// EnqueueCharged records a batch's: an expired record is removed first;
// then the insert makes a concurrent commit under the same key wait, then
// find this list. When the key names an unexpired list, it returns that
// list's description (replayed) or a conflict, and the caller's
// transaction, rolled back, leaves nothing.
func (s *Store) takeListKey(ctx context.Context, tx pgx.Tx, p jobtype.BeginListParams, batchID int64) (jobtype.ListInfo, bool, error) {
	ttl := cmp.Or(p.IdempotencyTTL, jobtype.DefaultIdempotencyTTL)
	_, err := tx.Exec(ctx, s.sql(`
		DELETE FROM {schema}.job_batches WHERE account = $1 AND idempotency_key = $2 AND expires_at <= now()`),
		p.AccountID, p.IdempotencyKey)
	if err != nil {
		return jobtype.ListInfo{}, false, fail(ctx, "commit list: key", err)
	}
	tag, err := tx.Exec(ctx, s.sql(`
		INSERT INTO {schema}.job_batches (account, idempotency_key, job_ids, fingerprint, expires_at)
		VALUES ($1, $2, ARRAY[$3::bigint], $4, now() + $5::bigint * interval '1 microsecond')
		ON CONFLICT (account, idempotency_key) DO NOTHING`),
		p.AccountID, p.IdempotencyKey, batchID, p.Fingerprint, ttl.Microseconds())
	if err != nil {
		return jobtype.ListInfo{}, false, fail(ctx, "commit list: key", err)
	}
	if tag.RowsAffected() == 1 {
		return jobtype.ListInfo{}, false, nil
	}
	var ids []int64
	var fingerprint *string
	err = tx.QueryRow(ctx, s.sql(`
		SELECT job_ids, fingerprint FROM {schema}.job_batches WHERE account = $1 AND idempotency_key = $2`),
		p.AccountID, p.IdempotencyKey).Scan(&ids, &fingerprint)
	switch {
	case err != nil:
		return jobtype.ListInfo{}, true, fail(ctx, "commit list: replay", err)
	case len(ids) != 1, fingerprint == nil, *fingerprint != p.Fingerprint:
		return jobtype.ListInfo{}, true, fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, p.IdempotencyKey)
	}
	rollback(tx)
	info, err := (&jobsDriver{s}).List(ctx, p.AccountID, strconv.FormatInt(ids[0], 10))
	if errors.Is(err, jobtype.ErrNotFound) {
		return jobtype.ListInfo{}, true, jobtype.ErrBatchReplayed
	}
	info.Replayed = err == nil
	return info, true, err
}

// analyzeAfterList is the number of jobs a list adds to its day's
// partition past which the partition's statistics are gathered at once:
// until autovacuum does, the planner would take the new jobs for none and
// sort them all at every lease instead of reading them in turn order.
const analyzeAfterList = 10_000

// analyzeJobsOfDay gathers the statistics of the jobs partition holding
// id's day. Failing, it logs: autovacuum will gather them later.
func (s *Store) analyzeJobsOfDay(ctx context.Context, id int64) {
	part := pgx.Identifier{partitionName("jobs", DayOfID(id))}.Sanitize()
	if _, err := s.pool.Exec(context.WithoutCancel(ctx), s.sql(`ANALYZE {schema}.`+part)); err != nil {
		s.logger.WarnContext(ctx, "pgstore: analyze the jobs of a new list", "partition", part, "err", err)
	}
}

// Abort implements [jobtype.ListWriter]: the transaction rolls back.
func (w *listWriter) Abort(ctx context.Context) error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return fail(ctx, "abort list", err)
}

// List implements [jobsdriver.ListDriver].
func (s *jobsDriver) List(ctx context.Context, accountID, batchID string) (jobtype.ListInfo, error) {
	id, ok := parseID(batchID)
	if !ok {
		return jobtype.ListInfo{}, jobtype.ErrNotFound
	}
	info := jobtype.ListInfo{BatchID: batchID, AccountID: accountID}
	var name *string
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT l.header, l.col, l.rows, l.addresses, l.duplicates, l.invalid_rows, l.charged, b.name
		FROM {schema}.lists l JOIN {schema}.batches b ON b.id = l.batch_id
		WHERE l.batch_id = $1 AND l.account = $2`), id, accountID).
		Scan(&info.Header, &info.Column, &info.Rows, &info.Addresses, &info.Duplicates, &info.InvalidRows, &info.Charged, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobtype.ListInfo{}, jobtype.ErrNotFound
	}
	if err != nil {
		return jobtype.ListInfo{}, fail(ctx, "list", err)
	}
	if name != nil {
		info.Name = *name
	}
	return info, nil
}

// ListRows implements [jobsdriver.ListDriver]: a page of rows, then their jobs.
func (s *jobsDriver) ListRows(ctx context.Context, p jobtype.ListRowsParams) ([]jobtype.ListRow, error) {
	id, ok := parseID(p.BatchID)
	if !ok {
		return nil, jobtype.ErrNotFound
	}
	var exists bool
	err := s.pool.QueryRow(ctx, s.sql(`SELECT EXISTS (SELECT 1 FROM {schema}.lists WHERE batch_id = $1 AND account = $2)`),
		id, p.AccountID).Scan(&exists)
	if err != nil {
		return nil, fail(ctx, "list rows", err)
	}
	if !exists {
		return nil, jobtype.ErrNotFound
	}
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT n, record, job_id FROM {schema}.list_rows WHERE batch_id = $1 AND n > $2 ORDER BY n LIMIT $3`),
		id, p.After, p.Limit)
	if err != nil {
		return nil, fail(ctx, "list rows", err)
	}
	var out []jobtype.ListRow
	var jobIDs []int64
	var rowJobs []int64
	var n int32
	var record []string
	var job *int64
	_, err = pgx.ForEachRow(rows, []any{&n, &record, &job}, func() error {
		out = append(out, jobtype.ListRow{N: int(n), Record: record})
		record = nil
		j := int64(0)
		if job != nil {
			j = *job
			jobIDs = append(jobIDs, j)
		}
		rowJobs = append(rowJobs, j)
		return nil
	})
	if err != nil {
		return nil, fail(ctx, "list rows", err)
	}
	if len(jobIDs) == 0 {
		return out, nil
	}
	jrows, err := s.pool.Query(ctx, s.sql(`SELECT `+jobColumns+` FROM {schema}.jobs WHERE id = ANY($1) AND batch_id = $2`), jobIDs, id)
	if err != nil {
		return nil, fail(ctx, "list rows: jobs", err)
	}
	ls, err := pgx.CollectRows(jrows, func(r pgx.CollectableRow) (jobsdriver.Lease, error) { return scanJob(r) })
	if err != nil {
		return nil, fail(ctx, "list rows: jobs", err)
	}
	byID := make(map[int64]*jobtype.Job, len(ls))
	for i := range ls {
		jid, _ := parseID(ls[i].ID)
		byID[jid] = &ls[i].Job
	}
	for i, j := range rowJobs {
		if j == 0 {
			continue
		}
		if job, ok := byID[j]; ok {
			c := *job
			out[i].Job = &c
		}
	}
	return out, nil
}

// cleanupLists removes the lists (and their rows) whose batch is gone.
func (s *Store) cleanupLists(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		WITH gone AS (
			DELETE FROM {schema}.lists l
			WHERE NOT EXISTS (SELECT 1 FROM {schema}.batches b WHERE b.id = l.batch_id)
			RETURNING batch_id
		)
		DELETE FROM {schema}.list_rows r USING gone WHERE r.batch_id = gone.batch_id`))
	return fail(ctx, "cleanup lists", err)
}
