package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/webhook"
)

var (
	_ webhook.Outbox    = (*Webhooks)(nil)
	_ webhook.Endpoints = (*Webhooks)(nil)
)

// Webhooks is the webhook side of a [Store]: its outbox ([webhook.Outbox])
// and endpoints ([webhook.Endpoints]), in the tables webhook_deliveries and
// webhook_endpoints of the Store's schema. The event a job completion
// records ([jobsdriver.CompleteParams.Event]) is inserted into webhook_deliveries
// by the statement that completes the job, so it is a pending delivery
// exactly when the job is completed; a batch's last completion inserts
// its batch.completed event with the batch's final counts in the column
// batch ([webhook.Event.Batch]), which every read turns into the event's
// bytes ([webhook.Event.Expand]); rows an earlier release wrote with the
// counts in the payload ([webhook.StoreBatchCompleted]) are read alike.
//
// Every time it stores (due times, lease expiries, attempt and finish
// times, endpoint timestamps) is the one passed by the caller, never the
// database's clock. Leasing is UPDATE ... WHERE event_id IN (SELECT ...
// FOR UPDATE SKIP LOCKED), so dispatchers in many processes share the
// outbox without waiting for each other; every later change is a
// compare-and-set on the lease token.
//
// It is a separate type because the job queue's methods on Store already
// carry the names Enqueue and Lease; [Store.Backend] hands out both.
type Webhooks struct{ s *Store }

// deliveryColumns are the columns scanDelivery reads, in order.
const deliveryColumns = `event_id, account_id, type, coalesce(job_id, ''), created_at, payload, state,
	next_attempt, finished_at, reason, attempts, lease_token, lease_expires, batch`

// attempt is the JSON form of a [webhook.Attempt] in the attempts column.
type attempt struct {
	At         time.Time `json:"at"`
	DurationNS int64     `json:"duration_ns"`
	StatusCode int       `json:"status,omitempty"`
	Error      string    `json:"error,omitempty"`
	URL        string    `json:"url,omitempty"`
}

// scanDelivery reads a row of deliveryColumns.
func scanDelivery(row pgx.Row) (webhook.Delivery, error) {
	var d webhook.Delivery
	var state string
	var next, finished, expires *time.Time
	var attempts []attempt
	var token *string
	err := row.Scan(&d.ID, &d.AccountID, &d.Type, &d.JobID, &d.CreatedAt, &d.Payload, &state,
		&next, &finished, &d.Reason, &attempts, &token, &expires, &d.Batch)
	if err != nil {
		return webhook.Delivery{}, err
	}
	d.State = webhook.State(state)
	if next != nil {
		d.NextAttempt = *next
	}
	if finished != nil {
		d.FinishedAt = *finished
	}
	if len(attempts) > 0 {
		d.Attempts = make([]webhook.Attempt, len(attempts))
		for i, a := range attempts {
			d.Attempts[i] = webhook.Attempt{
				At:         a.At,
				Duration:   time.Duration(a.DurationNS),
				StatusCode: a.StatusCode,
				Error:      a.Error,
				URL:        a.URL,
			}
		}
	}
	if token != nil && expires != nil {
		d.Lease = webhook.Lease{EventID: d.ID, Token: *token, Expires: *expires}
	}
	// A batch.completed event written by a completion holds the batch's
	// final counts (in batch, or in an earlier release's payload); the
	// webhook package makes its bytes.
	if err := d.Expand(); err != nil {
		return webhook.Delivery{}, fmt.Errorf("pgstore: %w", err)
	}
	return d, nil
}

// Enqueue implements [webhook.Outbox]. An event id already in the outbox,
// written by Enqueue or by a job completion, gives [webhook.ErrDuplicate].
func (w *Webhooks) Enqueue(ctx context.Context, ev webhook.Event) error {
	var jobID *string
	if ev.JobID != "" {
		jobID = &ev.JobID
	}
	payload := ev.Payload
	if payload == nil {
		payload = []byte{}
	}
	var batch []byte // NULL for none
	if ev.Batch != nil {
		batch, _ = json.Marshal(ev.Batch) // strings and ints always encode
		if len(payload) == 0 {
			// As the releases before the column read it.
			payload = webhook.StoreBatchCompleted(*ev.Batch)
		}
	}
	tag, err := w.s.pool.Exec(ctx, w.s.sql(`
		INSERT INTO {schema}.webhook_deliveries (event_id, account_id, type, job_id, created_at, payload, next_attempt, batch)
		VALUES ($1, $2, $3, $4, $5, $6, $5, $7::jsonb)
		ON CONFLICT (event_id) DO NOTHING`),
		ev.ID, ev.AccountID, ev.Type, jobID, ev.CreatedAt, payload, batch)
	if err != nil {
		return fail(ctx, "webhook enqueue", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", webhook.ErrDuplicate, ev.ID)
	}
	return nil
}

// Lease implements [webhook.Outbox]. The lease tokens are random UUIDs.
func (w *Webhooks) Lease(ctx context.Context, p webhook.LeaseParams) ([]webhook.Delivery, error) {
	if p.Limit <= 0 {
		return nil, fmt.Errorf("webhook: lease limit %d is not positive", p.Limit)
	}
	rows, err := w.s.pool.Query(ctx, w.s.sql(`
		UPDATE {schema}.webhook_deliveries
		SET lease_token = gen_random_uuid()::text, lease_expires = $2
		WHERE event_id IN (
			SELECT event_id FROM {schema}.webhook_deliveries
			WHERE state = 'pending' AND next_attempt <= $1 AND (lease_expires IS NULL OR lease_expires <= $1)
			ORDER BY next_attempt, event_id
			LIMIT $3
			FOR UPDATE SKIP LOCKED
		)
		RETURNING `+deliveryColumns), p.Now, p.Now.Add(p.Duration), p.Limit)
	if err != nil {
		return nil, fail(ctx, "webhook lease", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fail(ctx, "webhook lease", err)
	}
	slices.SortFunc(ds, func(a, b webhook.Delivery) int {
		return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), cmp.Compare(a.ID, b.ID))
	})
	return ds, nil
}

// change runs set, an SQL SET list whose parameters start at $3, on the
// delivery l holds: a compare-and-set on state and lease token. It tells
// [webhook.ErrLeaseLost] from [webhook.ErrNotFound] when nothing matched.
func (w *Webhooks) change(ctx context.Context, op string, l webhook.Lease, set string, args ...any) error {
	var changed, exists bool
	err := w.s.pool.QueryRow(ctx, w.s.sql(`
		WITH changed AS (
			UPDATE {schema}.webhook_deliveries SET `+set+`
			WHERE event_id = $1 AND state = 'pending' AND lease_token = $2
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM changed),
		       EXISTS (SELECT 1 FROM {schema}.webhook_deliveries WHERE event_id = $1)`),
		append([]any{l.EventID, l.Token}, args...)...).Scan(&changed, &exists)
	switch {
	case err != nil:
		return fail(ctx, op, err)
	case changed:
		return nil
	case exists:
		return webhook.ErrLeaseLost
	}
	return webhook.ErrNotFound
}

// RecordAttempt implements [webhook.Outbox].
func (w *Webhooks) RecordAttempt(ctx context.Context, l webhook.Lease, a webhook.Attempt) error {
	b, err := json.Marshal([]attempt{{
		At:         a.At,
		DurationNS: int64(a.Duration),
		StatusCode: a.StatusCode,
		Error:      a.Error,
		URL:        a.URL,
	}})
	if err != nil {
		return fmt.Errorf("pgstore: record attempt: %w", err)
	}
	return w.change(ctx, "record attempt", l, `attempts = attempts || $3::jsonb`, b)
}

// Reschedule implements [webhook.Outbox].
func (w *Webhooks) Reschedule(ctx context.Context, l webhook.Lease, next time.Time) error {
	return w.change(ctx, "reschedule", l,
		`next_attempt = $3::timestamptz, lease_token = NULL, lease_expires = NULL`, next)
}

// MarkDelivered implements [webhook.Outbox].
func (w *Webhooks) MarkDelivered(ctx context.Context, l webhook.Lease, at time.Time) error {
	return w.finish(ctx, "mark delivered", l, webhook.StateDelivered, at, "")
}

// MarkDead implements [webhook.Outbox].
func (w *Webhooks) MarkDead(ctx context.Context, l webhook.Lease, at time.Time, reason string) error {
	return w.finish(ctx, "mark dead", l, webhook.StateDead, at, reason)
}

func (w *Webhooks) finish(ctx context.Context, op string, l webhook.Lease, st webhook.State, at time.Time, reason string) error {
	return w.change(ctx, op, l, `state = $3::text, finished_at = $4::timestamptz, reason = $5::text,
		next_attempt = NULL, lease_token = NULL, lease_expires = NULL`, string(st), at, reason)
}

// Deliveries implements [webhook.Outbox].
func (w *Webhooks) Deliveries(ctx context.Context, p webhook.ListParams) ([]webhook.Delivery, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = webhook.DefaultListLimit
	}
	var beforeAt *time.Time
	var beforeID string
	if p.Before != nil {
		t := p.Before.CreatedAt.Truncate(time.Microsecond)
		beforeAt, beforeID = &t, p.Before.ID
	}
	// A row comparison on the index order pages without skipping or
	// repeating a row, however many share a creation time.
	rows, err := w.s.pool.Query(ctx, w.s.sql(`
		SELECT `+deliveryColumns+` FROM {schema}.webhook_deliveries
		WHERE account_id = $1 AND ($3::timestamptz IS NULL OR (created_at, event_id) < ($3, $4))
		ORDER BY created_at DESC, event_id DESC LIMIT $2`), p.AccountID, limit, beforeAt, beforeID)
	if err != nil {
		return nil, fail(ctx, "webhook deliveries", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) {
		d, err := scanDelivery(r)
		d.Lease = webhook.Lease{}
		return d, err
	})
	if err != nil {
		return nil, fail(ctx, "webhook deliveries", err)
	}
	return ds, nil
}

// Pending implements [webhook.Outbox].
func (w *Webhooks) Pending(ctx context.Context) (int, error) {
	var n int
	err := w.s.pool.QueryRow(ctx, w.s.sql(`
		SELECT count(*) FROM {schema}.webhook_deliveries WHERE state = 'pending'`)).Scan(&n)
	if err != nil {
		return 0, fail(ctx, "webhook pending", err)
	}
	return n, nil
}

// OldestPending implements [webhook.OldestPender].
func (w *Webhooks) OldestPending(ctx context.Context) (time.Time, error) {
	var oldest *time.Time
	err := w.s.pool.QueryRow(ctx, w.s.sql(`
		SELECT min(created_at) FROM {schema}.webhook_deliveries WHERE state = 'pending'`)).Scan(&oldest)
	if err != nil {
		return time.Time{}, fail(ctx, "webhook oldest pending", err)
	}
	if oldest == nil {
		return time.Time{}, nil
	}
	return *oldest, nil
}

// pruneBatch is how many deliveries one statement of Prune deletes, and
// pruneBatches how many such statements one call runs at most.
const (
	pruneBatch   = 10_000
	pruneBatches = 100
)

// Prune implements [webhook.Outbox]. It deletes in statements of
// pruneBatch deliveries, the oldest finished first, each its own
// transaction, so that no statement holds its locks and its dead rows
// for the whole backlog; a call deletes at most pruneBatches of them
// (a million deliveries), and the next prune goes on from there.
func (w *Webhooks) Prune(ctx context.Context, before time.Time) (int, error) {
	q := w.s.sql(`
		DELETE FROM {schema}.webhook_deliveries WHERE event_id IN (
			SELECT event_id FROM {schema}.webhook_deliveries
			WHERE state <> 'pending' AND finished_at < $1
			ORDER BY finished_at LIMIT $2::bigint
		) AND state <> 'pending' AND finished_at < $1`)
	n := 0
	for range pruneBatches {
		tag, err := w.s.pool.Exec(ctx, q, before, pruneBatch)
		if err != nil {
			return n, fail(ctx, "webhook prune", err)
		}
		n += int(tag.RowsAffected())
		if tag.RowsAffected() < pruneBatch {
			break
		}
	}
	return n, nil
}

// previousSecret is the JSON form of a [webhook.PreviousSecret] in the
// previous_secrets column.
type previousSecret struct {
	Secret    string    `json:"secret"`
	ExpiresAt time.Time `json:"expires_at"`
}

// endpointColumns are the columns scanEndpoint reads, in order.
const endpointColumns = `account_id, url, enabled, secret, previous_secrets, disabled_reason, created_at, updated_at, events`

func scanEndpoint(row pgx.Row) (webhook.Endpoint, error) {
	var e webhook.Endpoint
	var prev []previousSecret
	err := row.Scan(&e.AccountID, &e.URL, &e.Enabled, &e.Secret, &prev, &e.DisabledReason, &e.CreatedAt, &e.UpdatedAt, &e.Events)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	for _, p := range prev {
		e.PreviousSecrets = append(e.PreviousSecrets, webhook.PreviousSecret{Secret: p.Secret, ExpiresAt: p.ExpiresAt})
	}
	return e, nil
}

// GetEndpoint implements [webhook.Endpoints].
func (w *Webhooks) GetEndpoint(ctx context.Context, accountID string) (webhook.Endpoint, error) {
	e, err := scanEndpoint(w.s.pool.QueryRow(ctx, w.s.sql(`
		SELECT `+endpointColumns+` FROM {schema}.webhook_endpoints WHERE account_id = $1`), accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	if err != nil {
		return webhook.Endpoint{}, fail(ctx, "get endpoint", err)
	}
	return e, nil
}

// PutEndpoint implements [webhook.Endpoints]. It updates the endpoint when
// there is one, else inserts it; when a concurrent call inserted it first,
// it updates that one.
func (w *Webhooks) PutEndpoint(ctx context.Context, p webhook.PutEndpointParams) (webhook.Endpoint, bool, error) {
	_, secretErr := webhook.ParseSecret(p.Secret)
	events := webhook.NormalizeEvents(p.Events)
	for {
		e, err := scanEndpoint(w.s.pool.QueryRow(ctx, w.s.sql(`
			UPDATE {schema}.webhook_endpoints
			SET url = $2, enabled = $3, updated_at = $4, events = $5,
			    disabled_reason = CASE WHEN $3 THEN '' ELSE disabled_reason END
			WHERE account_id = $1
			RETURNING `+endpointColumns), p.AccountID, p.URL, p.Enabled, p.Now, events))
		if err == nil {
			return e, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return webhook.Endpoint{}, false, fail(ctx, "put endpoint", err)
		}
		if secretErr != nil {
			return webhook.Endpoint{}, false, secretErr
		}
		e, err = scanEndpoint(w.s.pool.QueryRow(ctx, w.s.sql(`
			INSERT INTO {schema}.webhook_endpoints (account_id, url, enabled, secret, created_at, updated_at, events)
			VALUES ($1, $2, $3, $4, $5, $5, $6)
			ON CONFLICT (account_id) DO NOTHING
			RETURNING `+endpointColumns), p.AccountID, p.URL, p.Enabled, p.Secret, p.Now, events))
		if err == nil {
			return e, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return webhook.Endpoint{}, false, fail(ctx, "put endpoint", err)
		}
		// Created concurrently: update it on the next turn.
	}
}

// DeleteEndpoint implements [webhook.Endpoints].
func (w *Webhooks) DeleteEndpoint(ctx context.Context, accountID string) error {
	tag, err := w.s.pool.Exec(ctx, w.s.sql(`DELETE FROM {schema}.webhook_endpoints WHERE account_id = $1`), accountID)
	if err != nil {
		return fail(ctx, "delete endpoint", err)
	}
	if tag.RowsAffected() == 0 {
		return webhook.ErrNotFound
	}
	return nil
}

// RotateSecret implements [webhook.Endpoints] in one transaction that
// locks the endpoint's row.
func (w *Webhooks) RotateSecret(ctx context.Context, p webhook.RotateSecretParams) (webhook.Endpoint, error) {
	if _, err := webhook.ParseSecret(p.Secret); err != nil {
		return webhook.Endpoint{}, err
	}
	tx, err := w.s.pool.Begin(ctx)
	if err != nil {
		return webhook.Endpoint{}, fail(ctx, "rotate secret", err)
	}
	defer rollback(tx)
	e, err := scanEndpoint(tx.QueryRow(ctx, w.s.sql(`
		SELECT `+endpointColumns+` FROM {schema}.webhook_endpoints WHERE account_id = $1 FOR UPDATE`), p.AccountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	if err != nil {
		return webhook.Endpoint{}, fail(ctx, "rotate secret", err)
	}
	kept := []previousSecret{}
	for _, ps := range e.PreviousSecrets {
		if p.Now.Before(ps.ExpiresAt) {
			kept = append(kept, previousSecret{Secret: ps.Secret, ExpiresAt: ps.ExpiresAt})
		}
	}
	kept = append(kept, previousSecret{Secret: e.Secret, ExpiresAt: p.PreviousExpiresAt})
	prev, err := json.Marshal(kept)
	if err != nil {
		return webhook.Endpoint{}, fmt.Errorf("pgstore: rotate secret: %w", err)
	}
	e, err = scanEndpoint(tx.QueryRow(ctx, w.s.sql(`
		UPDATE {schema}.webhook_endpoints SET secret = $2, previous_secrets = $3::jsonb, updated_at = $4
		WHERE account_id = $1
		RETURNING `+endpointColumns), p.AccountID, p.Secret, prev, p.Now))
	if err != nil {
		return webhook.Endpoint{}, fail(ctx, "rotate secret", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return webhook.Endpoint{}, fail(ctx, "rotate secret: commit", err)
	}
	return e, nil
}

// DisableEndpoint implements [webhook.Endpoints].
func (w *Webhooks) DisableEndpoint(ctx context.Context, p webhook.DisableEndpointParams) error {
	var changed, exists bool
	err := w.s.pool.QueryRow(ctx, w.s.sql(`
		WITH changed AS (
			UPDATE {schema}.webhook_endpoints SET enabled = false, disabled_reason = $3, updated_at = $4
			WHERE account_id = $1 AND url = $2
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM changed),
		       EXISTS (SELECT 1 FROM {schema}.webhook_endpoints WHERE account_id = $1)`),
		p.AccountID, p.URL, p.Reason, p.Now).Scan(&changed, &exists)
	switch {
	case err != nil:
		return fail(ctx, "disable endpoint", err)
	case changed:
		return nil
	case exists:
		return webhook.ErrEndpointChanged
	}
	return webhook.ErrNotFound
}
