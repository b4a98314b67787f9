package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

// jobColumns are the columns scanJob reads, in order.
const jobColumns = `id, account, email, state, cost, errors, last_error, created_at,
	completed_at, result, mx_hosts, token, lease_expires_at, batch_id, source, unjudged`

// scanJob reads a row of jobColumns.
func scanJob(row pgx.Row) (jobsdriver.Lease, error) {
	var l jobsdriver.Lease
	var id int64
	var state string
	var completed, expires *time.Time
	var result []byte
	var mx []string
	var token *string
	var batch int64
	var source *string
	err := row.Scan(&id, &l.AccountID, &l.Email, &state, &l.Cost, &l.Errors, &l.LastError, &l.CreatedAt,
		&completed, &result, &mx, &token, &expires, &batch, &source, &l.Unjudged)
	if err != nil {
		return jobsdriver.Lease{}, err
	}
	l.ID = strconv.FormatInt(id, 10)
	l.BatchID = strconv.FormatInt(batch, 10)
	l.Source = jobtype.SourceAPI
	if source != nil {
		l.Source = *source
	}
	l.State = jobtype.StateActive
	if state == "completed" {
		l.State = jobtype.StateCompleted
	}
	if completed != nil {
		l.CompletedAt = *completed
	}
	if result != nil {
		var r emailcheck.Result
		if err := json.Unmarshal(result, &r); err != nil {
			return jobsdriver.Lease{}, fmt.Errorf("job %d: result: %w", id, err)
		}
		r.MXHosts = mx
		l.Result = &r
	}
	if token != nil {
		l.Token = *token
	}
	if expires != nil {
		l.ExpiresAt = *expires
	}
	return l, nil
}

// parseID returns the numeric id of a job, or false for text that names no
// job.
func parseID(id string) (int64, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil && n > 0
}

func formatIDs(ids []int64) []string {
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out
}

// enqueueSQL inserts a batch and its counters in one statement; rows are
// numbered in the order of the addresses, and the batch is named after its
// first job.
const enqueueSQL = `
	WITH ` + turnsCTE + `, turns AS (
		INSERT INTO {schema}.job_turns AS jt (account, last_turn)
		SELECT $1, position.turn + cardinality($2::text[]) FROM position
		ON CONFLICT (account) DO UPDATE
		SET last_turn = greatest(jt.last_turn, EXCLUDED.last_turn - cardinality($2::text[])) + cardinality($2::text[])
		RETURNING last_turn - cardinality($2::text[]) AS start
	), t AS MATERIALIZED (
		SELECT {schema}.next_job_id() AS id, u.email, u.n
		FROM unnest($2::text[]) WITH ORDINALITY AS u(email, n)
	), ins AS (
		INSERT INTO {schema}.jobs (id, account, email, cost, batch_id, source, turn)
		SELECT t.id, $1, t.email, $3, (SELECT min(id) FROM t), $4::text, (SELECT start FROM turns) + t.n
		FROM t ORDER BY t.n
		RETURNING id
	), tally AS (
		INSERT INTO {schema}.batches (id, account, source, total, created_at)
		SELECT min(id), $1, coalesce($4::text, 'api'), count(*), now() FROM t
	)
	SELECT id FROM ins`

// sourceArg is the jobs' source column for a batch's source: NULL for the
// API.
func sourceArg(source string) *string {
	if source == "" || source == jobtype.SourceAPI {
		return nil
	}
	return &source
}

// Enqueue implements [jobsdriver.Driver]: the batch is one INSERT statement, and
// its commit wakes subscribed workers.
func (s *jobsDriver) Enqueue(ctx context.Context, p jobtype.EnqueueParams) ([]string, error) {
	if len(p.Emails) == 0 {
		return nil, jobtype.ErrEmptyBatch
	}
	rows, err := s.pool.Query(ctx, s.sql(enqueueSQL), p.AccountID, p.Emails, p.Cost, sourceArg(p.Source))
	if err != nil {
		return nil, fail(ctx, "enqueue", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fail(ctx, "enqueue", err)
	}
	return formatIDs(ids), nil
}

// EnqueueCharged implements [jobsdriver.ChargingDriver]: the charge, the jobs and
// the record of the batch's idempotency key are one transaction. The record
// expires after p.IdempotencyTTL; the charge's ledger entry carries no
// idempotency key, so an expired key can start a new batch.
func (s *jobsDriver) EnqueueCharged(ctx context.Context, p jobtype.EnqueueChargedParams) ([]string, error) {
	if len(p.Emails) == 0 {
		return nil, jobtype.ErrEmptyBatch
	}
	n := int64(len(p.Emails))
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fail(ctx, "enqueue charged", err)
	}
	defer rollback(tx)

	keyed := p.IdempotencyKey != ""
	if keyed {
		// An expired record is removed first; then taking the key makes a
		// concurrent batch under the same key wait at its insert, then
		// find this batch.
		ttl := cmp.Or(p.IdempotencyTTL, jobtype.DefaultIdempotencyTTL)
		_, err := tx.Exec(ctx, s.sql(`
			DELETE FROM {schema}.job_batches WHERE account = $1 AND idempotency_key = $2 AND expires_at <= now()`),
			p.AccountID, p.IdempotencyKey)
		if err != nil {
			return nil, fail(ctx, "enqueue charged: key", err)
		}
		tag, err := tx.Exec(ctx, s.sql(`
			INSERT INTO {schema}.job_batches (account, idempotency_key, job_ids, fingerprint, expires_at)
			VALUES ($1, $2, '{}', $3, now() + $4::bigint * interval '1 microsecond')
			ON CONFLICT (account, idempotency_key) DO NOTHING`),
			p.AccountID, p.IdempotencyKey, p.Fingerprint, ttl.Microseconds())
		if err != nil {
			return nil, fail(ctx, "enqueue charged: key", err)
		}
		if tag.RowsAffected() == 0 {
			return s.replayBatch(ctx, tx, p)
		}
	}
	if err := s.addBalance(ctx, tx, p.AccountID, -n); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, s.sql(enqueueSQL), p.AccountID, p.Emails, int64(1), sourceArg(p.Source))
	if err != nil {
		return nil, fail(ctx, "enqueue charged", err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fail(ctx, "enqueue charged", err)
	}
	ids := formatIDs(raw)
	ref := p.IdempotencyKey
	if !keyed {
		ref = "jobs:" + ids[0] + "-" + ids[len(ids)-1]
	}
	_, err = tx.Exec(ctx, s.sql(`
		INSERT INTO {schema}.credit_entries (account, delta, reason, reference) VALUES ($1, $2, $3, $4)`),
		p.AccountID, -n, string(credits.ReasonCharge), ref)
	if err != nil {
		return nil, fail(ctx, "enqueue charged", err)
	}
	if keyed {
		_, err = tx.Exec(ctx, s.sql(`
			UPDATE {schema}.job_batches SET job_ids = $3 WHERE account = $1 AND idempotency_key = $2`),
			p.AccountID, p.IdempotencyKey, raw)
		if err != nil {
			return nil, fail(ctx, "enqueue charged", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fail(ctx, "enqueue charged: commit", err)
	}
	return ids, nil
}

// replayBatch answers a batch whose idempotency key names an unexpired
// batch: the original ids when that was a batch of as many addresses with
// the same fingerprint, else an error.
func (s *Store) replayBatch(ctx context.Context, tx pgx.Tx, p jobtype.EnqueueChargedParams) ([]string, error) {
	var raw []int64
	var fingerprint *string
	err := tx.QueryRow(ctx, s.sql(`
		SELECT job_ids, fingerprint FROM {schema}.job_batches WHERE account = $1 AND idempotency_key = $2`),
		p.AccountID, p.IdempotencyKey).Scan(&raw, &fingerprint)
	switch {
	case err != nil:
		return nil, fail(ctx, "enqueue charged: replay", err)
	case len(raw) != len(p.Emails), fingerprint != nil && *fingerprint != p.Fingerprint:
		return nil, fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, p.IdempotencyKey)
	}
	return formatIDs(raw), nil
}

// turnsCTE names "position" the queue's position in the fair order: the
// latest turn leased (job_clock, which leases only move forward). A job
// given turns with it follows the later of that position and its
// account's last turn (job_turns, updated under the account's row lock,
// so that an account's batches keep their order).
const turnsCTE = `position AS MATERIALIZED (
		SELECT coalesce((SELECT turn FROM {schema}.job_clock), 0) AS turn
	)`

// leaseSQL leases up to $1 of the ready jobs with ids first..last, first
// in turn (the fair order between accounts, see [jobsdriver.Driver]), for $2
// microseconds, and returns them in that order. A job handed back for
// later is delayed until promoteSQL brings it back; the run-at is checked
// too for one that a release before delayed jobs handed back, during a
// rolling upgrade. The jobs chosen are
// updated by their ids as an array, looked up in the primary key: joined
// to the choice instead, the update may be planned as a scan of every job of the range, done or not,
// when the statistics lag behind the day's jobs.
const leaseSQL = `
	WITH next AS (
		SELECT id AS next_id FROM {schema}.jobs
		WHERE state = 'available' AND NOT delayed AND run_at <= now() AND id BETWEEN {first} AND {last}
		ORDER BY turn, id LIMIT $1::bigint
		FOR UPDATE SKIP LOCKED
	), leased AS (
		UPDATE {schema}.jobs j
		SET state = 'running', token = gen_random_uuid()::text,
		    lease_expires_at = clock_timestamp() + $2::bigint * interval '1 microsecond'
		WHERE j.id = ANY (ARRAY(SELECT next_id FROM next)) AND j.id BETWEEN {first} AND {last}
		RETURNING turn, ` + jobColumns + `
	), clock AS (
		-- The queue's position moves to the latest turn leased; a lease
		-- that finds another moving it leaves it to that one (and the
		-- next lease).
		SELECT one FROM {schema}.job_clock FOR UPDATE SKIP LOCKED
	), tick AS (
		UPDATE {schema}.job_clock SET turn = greatest(turn, (SELECT max(turn) FROM leased))
		WHERE one IN (SELECT one FROM clock) AND EXISTS (SELECT 1 FROM leased)
	)
	SELECT ` + jobColumns + ` FROM leased ORDER BY turn, id`

// promoteSQL makes up to $1 delayed jobs of the ids first..last whose
// run-at has come, of accounts other than $2, available to leases, each
// taking a new turn behind its account's jobs waiting now (the fair order,
// see [jobsdriver.Driver]), in id order within its account. It passes over the
// accounts whose row of job_turns another transaction holds (a list being
// committed holds its account's for as long as that takes) rather than
// wait, and returns how many jobs it promoted, how many due ones it saw,
// and the accounts it passed over. The accounts' rows are taken in
// account order, so that promotions running at once never deadlock. An
// account without a row (jobs from before turns were kept) is given one
// for the next look.
const promoteSQL = `
	WITH ` + turnsCTE + `, due AS MATERIALIZED (
		SELECT id, account FROM {schema}.jobs
		WHERE state = 'available' AND delayed AND run_at <= now() AND id BETWEEN {first} AND {last}
		  AND NOT (account = ANY ($2::text[]))
		ORDER BY run_at LIMIT $1::bigint
		FOR UPDATE SKIP LOCKED
	), seeded AS (
		INSERT INTO {schema}.job_turns (account, last_turn)
		SELECT DISTINCT account, 0 FROM due
		WHERE NOT EXISTS (SELECT 1 FROM {schema}.job_turns jt WHERE jt.account = due.account)
		ORDER BY account
		ON CONFLICT (account) DO NOTHING
	), held AS MATERIALIZED (
		SELECT jt.account FROM {schema}.job_turns jt
		WHERE jt.account IN (SELECT account FROM due)
		ORDER BY jt.account
		FOR UPDATE SKIP LOCKED
	), counts AS MATERIALIZED (
		SELECT due.account, count(*) AS n FROM due JOIN held USING (account) GROUP BY due.account
	), turns AS (
		UPDATE {schema}.job_turns jt
		SET last_turn = greatest(jt.last_turn, (SELECT turn FROM position)) + counts.n
		FROM counts WHERE jt.account = counts.account
		RETURNING jt.account, jt.last_turn
	), ranked AS (
		SELECT due.id, turns.last_turn - counts.n + row_number() OVER (PARTITION BY due.account ORDER BY due.id) AS turn
		FROM due JOIN counts USING (account) JOIN turns USING (account)
	), promoted AS (
		UPDATE {schema}.jobs j SET delayed = false, turn = ranked.turn
		FROM ranked WHERE j.id = ranked.id AND j.id BETWEEN {first} AND {last}
		RETURNING 1
	)
	SELECT (SELECT count(*) FROM promoted), (SELECT count(*) FROM due),
	       ARRAY(SELECT DISTINCT account FROM due WHERE account NOT IN (SELECT account FROM held))`

// promoteBatch is the most delayed jobs one promotion makes available.
const promoteBatch = 1000

// promoteInterval is how often a Store looks for delayed jobs come due:
// a job handed back for later waits at most about this long past its
// run-at (besides the pool's own polling).
const promoteInterval = 20 * time.Millisecond

// promote runs promoteSQL over first..last when promoteInterval has passed
// since this Store's last look, and again at once, a few times at most,
// while a look finds a full batch. An error is logged and left to the next look: a late
// promotion only delays retries.
func (s *Store) promote(ctx context.Context, now time.Time, first, last int64) {
	// A wall clock stepped back since the last look (a correction of the
	// time) makes that look seem to lie ahead: then look now, rather
	// than once the clock has caught up.
	prev := s.promoted.Load()
	if since := now.UnixNano() - prev; since >= 0 && since < int64(promoteInterval) || !s.promoted.CompareAndSwap(prev, now.UnixNano()) {
		return
	}
	passed := []string{}
	for range 10 {
		var promoted, due int64
		var busy []string
		err := s.pool.QueryRow(ctx, s.sqlIDs(promoteSQL, first, last), promoteBatch, passed).Scan(&promoted, &due, &busy)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.WarnContext(ctx, "pgstore: promote delayed jobs", "err", err)
			}
			return
		}
		// More may be due: behind a full batch, or behind the jobs of
		// the accounts passed over, which the next look leaves out.
		if due < promoteBatch {
			return
		}
		passed = append(passed, busy...)
	}
}

// Lease implements [jobsdriver.Driver] with SELECT ... FOR UPDATE SKIP LOCKED, so
// that concurrent leasers never wait for each other nor share a job.
func (s *jobsDriver) Lease(ctx context.Context, p jobsdriver.LeaseParams) ([]jobsdriver.Lease, error) {
	if p.Max < 1 || p.Duration <= 0 {
		return nil, fmt.Errorf("jobs: invalid lease request (max %d, duration %v)", p.Max, p.Duration)
	}
	// SKIP LOCKED lets workers in many processes lease at once without
	// waiting on each other's rows: each takes the oldest jobs no one else
	// is taking. The new token is random, so only this lease can complete
	// the job; the expiry uses the database's clock, the one that rescue
	// compares against, so workers' clocks need not agree.
	//
	// The partitions from the lease floor to today hold every job not
	// finished (see leaseFloor): the lease looks there, and at the whole
	// table only for what that range lacks, at most once a floorRecheck
	// (see sweepDue), as that form plans and locks every partition.
	now := time.Now()
	first, last := s.leaseRange(ctx, now)
	s.promote(ctx, now, first, last)
	leases, err := s.lease(ctx, first, last, p.Max, p.Duration)
	if err == nil && len(leases) < p.Max && (first > 0 || last < math.MaxInt64) && s.sweepDue(now) {
		var more []jobsdriver.Lease
		more, err = s.lease(ctx, 0, math.MaxInt64, p.Max-len(leases), p.Duration)
		s.swept(now, err == nil, len(more) > 0)
		leases = append(leases, more...)
	}
	if err != nil {
		if len(leases) > 0 {
			// The jobs leased are held all the same: hand them out, and
			// the error goes with the next lease that meets it.
			err = nil
		} else {
			return nil, err
		}
	}
	return leases, nil
}

// leaseSettingsSQL sets, for the rest of a lease's transaction, how it is
// planned and committed (see lease).
const leaseSettingsSQL = "SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true), " +
	"set_config('synchronous_commit', 'off', true)"

// lease runs leaseSQL in a transaction of its own that plans it without
// a sort, sent in one round trip.
//
// The only plan without a sort reads the turn index in order and stops
// after the jobs it leases. Left to its statistics, the planner may
// instead read every ready job of the range by id and sort them all,
// which it rates as cheap while the statistics say the day's partition
// is nearly empty (as they do until the first analyze after a large
// enqueue, and the plan is kept as long as the statistics are): then
// every lease costs in proportion to the queue's length.
func (s *Store) lease(ctx context.Context, first, last int64, max int, d time.Duration) ([]jobsdriver.Lease, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	// Without a sort the plan's cost is rated past any threshold, which
	// would have it compiled (JIT) on every lease: no JIT either.
	//
	// The commit does not wait for the disk: a lease lost in a crash of
	// the database leaves its jobs as they were before it (available, in
	// their places), which is what the crash of a worker gives too, once
	// its leases are rescued; and every later change to those jobs
	// (a completion, a retry) waits for its own commit, which the
	// database writes after the lease's.
	b.Queue(leaseSettingsSQL)
	var leases []jobsdriver.Lease
	b.Queue(s.sqlIDs(leaseSQL, first, last), max, d.Microseconds()).Query(func(rows pgx.Rows) error {
		var err error
		leases, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobsdriver.Lease, error) { return scanJob(r) })
		return err
	})
	b.Queue("COMMIT")
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, fail(ctx, "lease", err)
	}
	return leases, nil
}

// held turns the outcome of a compare-and-set on (state, token) into the
// driver's errors: changed is whether the row matched, exists whether the
// job exists at all.
func held(changed, exists bool) error {
	switch {
	case changed:
		return nil
	case exists:
		return jobtype.ErrLeaseLost
	}
	return jobtype.ErrNotFound
}

// Heartbeat implements [jobsdriver.Driver].
func (s *jobsDriver) Heartbeat(ctx context.Context, p jobsdriver.HeartbeatParams) (time.Time, error) {
	id, ok := parseID(p.ID)
	if !ok {
		return time.Time{}, jobtype.ErrNotFound
	}
	var expires *time.Time
	var exists bool
	first, last := dayBounds(id, id)
	// One round trip renews the lease only while this token holds it
	// (compare-and-set on state and token) and tells a lost lease from an
	// unknown job.
	err := s.pool.QueryRow(ctx, s.sqlIDs(`
		WITH renewed AS (
			UPDATE {schema}.jobs SET lease_expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
			WHERE id = $1::bigint AND id BETWEEN {first} AND {last} AND state = 'running' AND token = $2::text
			RETURNING lease_expires_at
		)
		SELECT (SELECT lease_expires_at FROM renewed),
		       EXISTS (SELECT 1 FROM {schema}.jobs WHERE id = $1 AND id BETWEEN {first} AND {last})`, first, last),
		id, p.Token, p.Duration.Microseconds()).Scan(&expires, &exists)
	if err != nil {
		return time.Time{}, fail(ctx, "heartbeat", err)
	}
	if err := held(expires != nil, exists); err != nil {
		return time.Time{}, err
	}
	return *expires, nil
}

// completeSQL completes a job, counts it in its batch, refunds it and
// writes its webhook events in one statement, hence one transaction, on
// the partitions of the job's day ({first}..{last}, see sqlIDs);
// nothing is written unless the token still holds the job. The batch row's
// lock orders the completions of one batch, so exactly one of them sees
// completed reach total and writes the batch's event. The refund's
// idempotency key is the job's, so a refund is never given twice. An event
// id already in the outbox violates the deliveries' primary key and so
// fails the whole statement.
const completeSQL = `
	WITH done AS (
		UPDATE {schema}.jobs
		SET state = 'completed', result = $3::jsonb, mx_hosts = $4::text[], completed_at = now(),
		    token = NULL, lease_expires_at = NULL
		WHERE id = $1::bigint AND id BETWEEN {first} AND {last} AND state = 'running' AND token = $2::text
		RETURNING id, account, completed_at, batch_id
	), tally AS (
		UPDATE {schema}.batches b
		SET completed = b.completed + 1,
		    counts = jsonb_set(b.counts, ARRAY[$11::text], to_jsonb(coalesce((b.counts->>$11::text)::int, 0) + 1)),
		    completed_at = CASE WHEN b.completed + 1 = b.total THEN done.completed_at END
		FROM done WHERE b.id = done.batch_id
		  -- A batch's id is its first job's, of the same day.
		  AND b.id BETWEEN {first} AND {last}
		RETURNING b.id, b.total, b.completed, b.counts
	), refund AS (
		INSERT INTO {schema}.credit_entries (account, delta, reason, reference, idempotency_key)
		SELECT account, $5::bigint, 'refund', 'job:' || $6::text, 'refund:job:' || $6::text
		FROM done WHERE $5::bigint > 0
		ON CONFLICT (account, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING account, delta
	), balance AS (
		INSERT INTO {schema}.credit_balances AS b (account, balance)
		SELECT account, delta FROM refund
		ON CONFLICT (account) DO UPDATE SET balance = b.balance + EXCLUDED.balance
	), event AS (
		INSERT INTO {schema}.webhook_deliveries
		    (event_id, account_id, type, job_id, created_at, payload, next_attempt)
		SELECT $7::text, account, $8::text, id::text, coalesce($9::timestamptz, completed_at), $10::bytea,
		       coalesce($9::timestamptz, completed_at)
		FROM done WHERE $7::text IS NOT NULL
	), batch_event AS (
		INSERT INTO {schema}.webhook_deliveries
		    (event_id, account_id, type, job_id, created_at, payload, next_attempt, batch)
		SELECT $12::text, done.account, $13::text, done.id::text, $14::timestamptz,
		       '\x00'::bytea || convert_to(b.data::text, 'UTF8'), $14::timestamptz, b.data
		FROM done, tally, LATERAL (SELECT jsonb_build_object('batch_id', tally.id::text, 'total', tally.total,
		                                                     'counts', tally.counts) AS data) b
		WHERE $12::text IS NOT NULL AND tally.completed = tally.total
	)
	SELECT EXISTS (SELECT 1 FROM done), EXISTS (SELECT 1 FROM {schema}.jobs WHERE id = $1 AND id BETWEEN {first} AND {last})`

// Complete implements [jobsdriver.Driver]: result, batch counters, refund and
// events are written by one statement. The event becomes a pending delivery of
// [Webhooks], due at its CreatedAt (the completion time when zero).
// An event id already in the outbox fails the completion as a whole with
// an error wrapping [webhook.ErrDuplicate]; the lease still holds.
func (s *jobsDriver) Complete(ctx context.Context, p jobsdriver.CompleteParams) error {
	args, err := completeArgs(p)
	if err != nil {
		return err
	}
	id, _ := parseID(p.ID) // completeArgs checked it
	first, last := dayBounds(id, id)
	var changed, exists bool
	err = s.pool.QueryRow(ctx, s.sqlIDs(completeSQL, first, last), args...).Scan(&changed, &exists)
	if isUniqueViolation(err, "webhook_deliveries_pkey") {
		return fmt.Errorf("pgstore: complete job %s: %w", p.ID, webhook.ErrDuplicate)
	}
	if err != nil {
		return fail(ctx, "complete", err)
	}
	return held(changed, exists)
}

// completeArgs returns completeSQL's arguments for p.
func completeArgs(p jobsdriver.CompleteParams) ([]any, error) {
	id, ok := parseID(p.ID)
	if !ok {
		return nil, jobtype.ErrNotFound
	}
	result, err := json.Marshal(p.Result)
	if err != nil {
		return nil, fmt.Errorf("pgstore: complete: result: %w", err)
	}
	var eventID, eventType *string
	var created *time.Time
	var payload []byte
	if e := p.Event; e != nil {
		eventID, eventType = &e.ID, &e.Type
		if !e.CreatedAt.IsZero() {
			created = &e.CreatedAt
		}
		payload = e.Payload
		if payload == nil {
			payload = []byte{}
		}
	}
	var batchID, batchType *string
	var batchAt *time.Time
	if e := p.BatchEvent; e != nil {
		batchID, batchType, batchAt = &e.ID, &e.Type, &e.CreatedAt
	}
	return []any{id, p.Token, result, p.Result.MXHosts, max(p.Refund, 0), strconv.FormatInt(id, 10), eventID, eventType, created, payload,
		string(p.Result.Confidence.Status), batchID, batchType, batchAt}, nil
}

// completeManySQL is completeSQL for a group of jobs in one statement:
// the jobs whose tokens still hold them are completed, each batch's row
// takes its share of the counts at once (under its lock, so the
// completion that brings a batch to its total is the statement's and
// writes the batch's event, for the first of its jobs that asks), the
// refunds are summed per account, and one row per input job tells
// whether it changed and whether it exists. {first}..{last} covers the
// days of the group's ids (see sqlIDs).
const completeManySQL = `
	WITH input AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::jsonb[], $4::text[], $5::bigint[], $6::text[],
		                     $7::text[], $8::text[], $9::timestamptz[], $10::bytea[],
		                     $11::text[], $12::text[], $13::timestamptz[])
		AS u(id, token, result, mx, refund, status, ev_id, ev_type, ev_created, ev_payload,
		     bev_id, bev_type, bev_created)
	), done AS (
		UPDATE {schema}.jobs j
		SET state = 'completed', result = u.result, mx_hosts = CASE WHEN u.mx = '' THEN NULL ELSE string_to_array(u.mx, ' ') END,
		    completed_at = now(), token = NULL, lease_expires_at = NULL
		FROM input u
		WHERE j.id = u.id AND j.state = 'running' AND j.token = u.token
		  -- The ids as an array too: the plan looks them up in the
		  -- primary key rather than scanning the running jobs of the
		  -- whole range.
		  AND j.id = ANY($1::bigint[]) AND j.id BETWEEN {first} AND {last}
		RETURNING j.id, j.account, j.completed_at, j.batch_id
	), per_status AS (
		SELECT d.batch_id, u.status, count(*)::int AS n FROM done d JOIN input u ON u.id = d.id GROUP BY 1, 2
	), per_batch AS (
		SELECT batch_id, sum(n)::int AS n, jsonb_object_agg(status, n) AS delta FROM per_status GROUP BY batch_id
	), tally AS (
		UPDATE {schema}.batches b
		SET completed = b.completed + p.n,
		    counts = (SELECT jsonb_object_agg(k, v) FROM (
		                 SELECT c.k, sum(c.v::int) AS v
		                 FROM (SELECT key AS k, value AS v FROM jsonb_each_text(b.counts)
		                       UNION ALL SELECT key, value FROM jsonb_each_text(p.delta)) AS c
		                 GROUP BY c.k) AS x),
		    completed_at = CASE WHEN b.completed + p.n = b.total THEN now() END
		FROM per_batch p WHERE b.id = p.batch_id
		  AND b.id BETWEEN {first} AND {last}
		RETURNING b.id, b.total, b.completed, b.counts
	), refund AS (
		INSERT INTO {schema}.credit_entries (account, delta, reason, reference, idempotency_key)
		SELECT d.account, u.refund, 'refund', 'job:' || d.id, 'refund:job:' || d.id
		FROM done d JOIN input u ON u.id = d.id WHERE u.refund > 0
		ON CONFLICT (account, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING account, delta
	), balance AS (
		INSERT INTO {schema}.credit_balances AS b (account, balance)
		SELECT account, sum(delta) FROM refund GROUP BY account
		ON CONFLICT (account) DO UPDATE SET balance = b.balance + EXCLUDED.balance
	), event AS (
		INSERT INTO {schema}.webhook_deliveries
		    (event_id, account_id, type, job_id, created_at, payload, next_attempt)
		SELECT u.ev_id, d.account, u.ev_type, d.id::text, coalesce(u.ev_created, d.completed_at), u.ev_payload,
		       coalesce(u.ev_created, d.completed_at)
		FROM done d JOIN input u ON u.id = d.id WHERE u.ev_id IS NOT NULL
	), batch_event AS (
		INSERT INTO {schema}.webhook_deliveries
		    (event_id, account_id, type, job_id, created_at, payload, next_attempt, batch)
		SELECT DISTINCT ON (t.id) u.bev_id, d.account, u.bev_type, d.id::text, u.bev_created,
		       '\x00'::bytea || convert_to(b.data::text, 'UTF8'), u.bev_created, b.data
		FROM tally t JOIN done d ON d.batch_id = t.id JOIN input u ON u.id = d.id,
		     LATERAL (SELECT jsonb_build_object('batch_id', t.id::text, 'total', t.total, 'counts', t.counts) AS data) b
		WHERE t.completed = t.total AND u.bev_id IS NOT NULL
		ORDER BY t.id, d.id
	)
	SELECT u.id, d.id IS NOT NULL, EXISTS (SELECT 1 FROM {schema}.jobs WHERE id = u.id AND id BETWEEN {first} AND {last})
	FROM input u LEFT JOIN done d ON d.id = u.id`

// CompleteMany implements [jobsdriver.BatchCompleter] with completeManySQL: one
// statement, one round trip and one commit for the group. If the
// statement fails as a whole (an event id already in the outbox, say),
// each job is completed on its own instead, so the failure stays with
// its job.
func (s *jobsDriver) CompleteMany(ctx context.Context, ps []jobsdriver.CompleteParams) []error {
	errs := make([]error, len(ps))
	n := len(ps)
	var (
		ids                              = make([]int64, 0, n)
		tokens, mxs, statuses            = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		results                          = make([][]byte, 0, n)
		refunds                          = make([]int64, 0, n)
		evIDs, evTypes, bevIDs, bevTypes = make([]*string, 0, n), make([]*string, 0, n), make([]*string, 0, n), make([]*string, 0, n)
		evCreated, bevCreated            = make([]*time.Time, 0, n), make([]*time.Time, 0, n)
		evPayloads                       = make([][]byte, 0, n)
		index                            = make(map[int64]int, n)
	)
	for i, p := range ps {
		id, ok := parseID(p.ID)
		if !ok {
			errs[i] = jobtype.ErrNotFound
			continue
		}
		if _, dup := index[id]; dup {
			errs[i] = s.Complete(ctx, p) // the same job twice: the second finds its lease gone
			continue
		}
		result, err := json.Marshal(p.Result)
		if err != nil {
			errs[i] = fmt.Errorf("pgstore: complete: result: %w", err)
			continue
		}
		index[id] = i
		ids, tokens, results = append(ids, id), append(tokens, p.Token), append(results, result)
		mxs, refunds, statuses = append(mxs, strings.Join(p.Result.MXHosts, " ")), append(refunds, max(p.Refund, 0)), append(statuses, string(p.Result.Confidence.Status))
		var eid, etype *string
		var ecreated *time.Time
		var payload []byte
		if e := p.Event; e != nil {
			eid, etype, payload = &e.ID, &e.Type, e.Payload
			if payload == nil {
				payload = []byte{}
			}
			if !e.CreatedAt.IsZero() {
				ecreated = &e.CreatedAt
			}
		}
		evIDs, evTypes, evCreated, evPayloads = append(evIDs, eid), append(evTypes, etype), append(evCreated, ecreated), append(evPayloads, payload)
		var bid, btype *string
		var bcreated *time.Time
		if e := p.BatchEvent; e != nil {
			bid, btype, bcreated = &e.ID, &e.Type, &e.CreatedAt
		}
		bevIDs, bevTypes, bevCreated = append(bevIDs, bid), append(bevTypes, btype), append(bevCreated, bcreated)
	}
	if len(ids) == 0 {
		return errs
	}
	first, last := dayBounds(slices.Min(ids), slices.Max(ids))
	rows, err := s.pool.Query(ctx, s.sqlIDs(completeManySQL, first, last), ids, tokens, results, mxs, refunds, statuses,
		evIDs, evTypes, evCreated, evPayloads, bevIDs, bevTypes, bevCreated)
	answered := make(map[int64]bool, len(ids))
	if err == nil {
		var id int64
		var changed, exists bool
		_, err = pgx.ForEachRow(rows, []any{&id, &changed, &exists}, func() error {
			if i, ok := index[id]; ok {
				errs[i] = held(changed, exists)
				answered[id] = true
			}
			return nil
		})
	}
	if err == nil {
		for id, i := range index {
			if !answered[id] {
				errs[i] = fmt.Errorf("pgstore: complete job %d: the statement gave no answer for it", id)
			}
		}
		return errs
	}
	if ctx.Err() != nil {
		for _, i := range index {
			errs[i] = fail(ctx, "complete", cmp.Or(err, ctx.Err()))
		}
		return errs
	}
	// Nothing was written: complete them one by one, so one job's
	// failure stays its own.
	for _, i := range index {
		errs[i] = s.Complete(ctx, ps[i])
	}
	return errs
}

// Retry implements [jobsdriver.Driver].
func (s *jobsDriver) Retry(ctx context.Context, p jobsdriver.RetryParams) error {
	id, ok := parseID(p.ID)
	if !ok {
		return jobtype.ErrNotFound
	}
	var runAt *time.Time
	if !p.RunAt.IsZero() {
		runAt = &p.RunAt
	}
	var changed, exists bool
	first, last := dayBounds(id, id)
	// A failed attempt costs the account a turn: the job takes one behind
	// the account's other jobs. A job handed back for later is delayed
	// and takes that turn when it comes due (promoteSQL), also when the
	// caller's clock, behind the database's, asked for a time already
	// past. A job handed back at once without an error keeps its turn.
	err := s.pool.QueryRow(ctx, s.sqlIDs(`
		WITH `+turnsCTE+`, mine AS (
			SELECT account FROM {schema}.jobs
			WHERE id = $1::bigint AND id BETWEEN {first} AND {last} AND state = 'running' AND token = $2::text
			  AND $4::text <> '' AND $3::timestamptz IS NULL
		), turn AS (
			INSERT INTO {schema}.job_turns AS jt (account, last_turn)
			SELECT mine.account, position.turn + 1 FROM mine, position
			ON CONFLICT (account) DO UPDATE SET last_turn = greatest(jt.last_turn, EXCLUDED.last_turn - 1) + 1
			RETURNING last_turn
		), back AS (
			UPDATE {schema}.jobs
			SET state = 'available', token = NULL, lease_expires_at = NULL,
			    run_at = coalesce($3::timestamptz, now()),
			    delayed = $3::timestamptz IS NOT NULL,
			    errors = errors + CASE WHEN $4::text <> '' THEN 1 ELSE 0 END,
			    last_error = CASE WHEN $4::text <> '' THEN $4::text ELSE last_error END,
			    unjudged = CASE WHEN $4::text <> '' THEN $5::integer ELSE unjudged END,
			    turn = coalesce((SELECT last_turn FROM turn), turn)
			WHERE id = $1::bigint AND id BETWEEN {first} AND {last} AND state = 'running' AND token = $2::text
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM back),
		       EXISTS (SELECT 1 FROM {schema}.jobs WHERE id = $1 AND id BETWEEN {first} AND {last})`, first, last),
		id, p.Token, runAt, p.Error, p.Unjudged).Scan(&changed, &exists)
	if err != nil {
		return fail(ctx, "retry", err)
	}
	return held(changed, exists)
}

// RescueExpired implements [jobsdriver.Driver]. The rows are locked and their
// state and expiry checked again under the lock, so a job completed or
// re-leased meanwhile is left alone. Subscribed workers are woken when jobs
// were rescued.
func (s *jobsDriver) RescueExpired(ctx context.Context, p jobsdriver.RescueParams) (int, error) {
	var limit *int64
	if p.Limit > 0 {
		l := int64(p.Limit)
		limit = &l
	}
	// SKIP LOCKED: a job whose completion is in flight holds its row lock,
	// so rescue passes it over instead of handing it out again; the
	// completion's own compare-and-set then wins. A rescue counts a failure
	// towards the job's attempts.
	tag, err := s.pool.Exec(ctx, s.sql(`
		WITH expired AS (
			SELECT id FROM {schema}.jobs
			WHERE state = 'running' AND lease_expires_at < now()
			ORDER BY id LIMIT $1::bigint
			FOR UPDATE SKIP LOCKED
		)
		UPDATE {schema}.jobs j
		SET state = 'available', token = NULL, lease_expires_at = NULL, run_at = now(), delayed = false,
		    errors = j.errors + 1, last_error = 'lease expired', unjudged = 0
		FROM expired WHERE j.id = expired.id`), limit)
	if err != nil {
		return 0, fail(ctx, "rescue", err)
	}
	n := int(tag.RowsAffected())
	if n > 0 {
		// The jobs trigger notifies on INSERT only: wake the pools for the
		// rescued jobs too. A failed notify only delays them to the next
		// poll.
		if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, s.channel()); err != nil {
			s.logger.WarnContext(ctx, "pgstore: notify after rescue", "err", err)
		}
	}
	return n, nil
}

// Get implements [jobsdriver.Driver].
func (s *jobsDriver) Get(ctx context.Context, account, id string) (jobtype.Job, error) {
	n, ok := parseID(id)
	if !ok {
		return jobtype.Job{}, jobtype.ErrNotFound
	}
	first, last := dayBounds(n, n)
	l, err := scanJob(s.pool.QueryRow(ctx, s.sqlIDs(`SELECT `+jobColumns+` FROM {schema}.jobs
		WHERE id = $1 AND id BETWEEN {first} AND {last} AND account = $2`, first, last), n, account))
	if errors.Is(err, pgx.ErrNoRows) {
		return jobtype.Job{}, jobtype.ErrNotFound
	}
	if err != nil {
		return jobtype.Job{}, fail(ctx, "get job", err)
	}
	return l.Job, nil
}

// Cleanup implements [jobsdriver.Driver]. Jobs and batches go by whole days:
// those finished before the start of p.CompletedBefore's day (UTC) are
// removed, most of them by dropping their day's partition (see
// [Store.EnsurePartitions]); a completed job is kept at most a day longer
// than asked (CleanupGranularity). p.Limit bounds the rows deleted
// one by one, not the partitions dropped. Cleanup also makes the
// partitions of the days ahead and removes expired idempotency records,
// dashboard sessions and mailed tokens.
func (s *jobsDriver) Cleanup(ctx context.Context, p jobsdriver.CleanupParams) (int, error) {
	// One process at a time makes and drops partitions; another
	// cleaning up meanwhile leaves it to the one holding the lock.
	n := 0
	_, err := s.withPartitionLock(ctx, func(conn *pgx.Conn) error {
		// One try each: a partition whose locks are busy is made at
		// the next cleanup, the default partition holding its rows
		// meanwhile.
		switch err := s.ensurePartitions(ctx, conn, time.Now(), 1); {
		case errors.Is(err, ErrPartitionBusy):
			s.logger.InfoContext(ctx, "pgstore: partitions of the days ahead made at a later cleanup", "err", err)
		case err != nil:
			s.logger.WarnContext(ctx, "pgstore: partitions of the days ahead", "err", err)
		}
		for _, t := range partitionedTables {
			limit := p.Limit
			if t.name != "jobs" {
				limit = 0
			}
			removed, err := s.dropExpired(ctx, conn, t, p.CompletedBefore, limit)
			if t.name == "jobs" {
				n = removed
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	if err := s.cleanupLists(ctx); err != nil {
		return n, err
	}
	_, err = s.pool.Exec(ctx, s.sql(`
		WITH sessions AS (DELETE FROM {schema}.sessions WHERE expiry < now()),
		     tokens AS (DELETE FROM {schema}.account_tokens WHERE expiry < now())
		DELETE FROM {schema}.job_batches WHERE expires_at <= now()`))
	if err != nil {
		return n, fail(ctx, "cleanup", err)
	}
	return n, nil
}

// CleanupGranularity implements [jobsdriver.GranularCleanup]: jobs leave by
// whole days.
func (s *jobsDriver) CleanupGranularity() time.Duration { return 24 * time.Hour }

var _ jobsdriver.BatchDeferrer = (*jobsDriver)(nil)

// DeferMany implements [jobsdriver.BatchDeferrer] with one statement: each job
// still held by its token becomes delayed until its run-at, keeping its
// errors, and takes its new turn when it comes due (promoteSQL), as
// Retry does for a job handed back for later.
func (s *jobsDriver) DeferMany(ctx context.Context, ps []jobsdriver.RetryParams) []error {
	errs := make([]error, len(ps))
	ids := make([]int64, 0, len(ps))
	tokens := make([]string, 0, len(ps))
	runAts := make([]time.Time, 0, len(ps))
	at := make([]int, 0, len(ps)) // index in ps of each id sent
	for i, p := range ps {
		id, ok := parseID(p.ID)
		switch {
		case !ok:
			errs[i] = jobtype.ErrNotFound
		case p.Error != "" || p.RunAt.IsZero():
			errs[i] = s.Retry(ctx, p)
		default:
			ids, tokens, runAts, at = append(ids, id), append(tokens, p.Token), append(runAts, p.RunAt), append(at, i)
		}
	}
	if len(ids) == 0 {
		return errs
	}
	first, last := dayBounds(slices.Min(ids), slices.Max(ids))
	rows, err := s.pool.Query(ctx, s.sqlIDs(`
		WITH x AS (
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS x(id, token, run_at)
		), back AS (
			UPDATE {schema}.jobs j
			SET state = 'available', token = NULL, lease_expires_at = NULL, run_at = x.run_at, delayed = true
			FROM x
			WHERE j.id = x.id AND j.id BETWEEN {first} AND {last} AND j.state = 'running' AND j.token = x.token
			RETURNING j.id
		)
		SELECT x.id, EXISTS (SELECT 1 FROM back WHERE back.id = x.id),
		       EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.id = x.id AND j.id BETWEEN {first} AND {last})
		FROM x`, first, last), ids, tokens, runAts)
	if err != nil {
		err = fail(ctx, "defer", err)
		for _, i := range at {
			errs[i] = err
		}
		return errs
	}
	outcome := make(map[int64]error, len(ids))
	for rows.Next() {
		var id int64
		var changed, exists bool
		if err := rows.Scan(&id, &changed, &exists); err != nil {
			rows.Close()
			break
		}
		outcome[id] = held(changed, exists)
	}
	if err := rows.Err(); err != nil {
		err = fail(ctx, "defer", err)
		for _, i := range at {
			errs[i] = err
		}
		return errs
	}
	for k, i := range at {
		e, ok := outcome[ids[k]]
		if !ok {
			e = fmt.Errorf("pgstore: defer job %s: no outcome", ps[i].ID)
		}
		errs[i] = e
	}
	return errs
}
