package pgstore_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/webhook"
)

// TestCompleteWritesDelivery checks what a completion's event becomes: a
// pending delivery of the job's account, due at the completion time when
// the event has no CreatedAt, leasable at once; and that a duplicate id
// fails with webhook.ErrDuplicate and leaves the lease intact.
func TestCompleteWritesDelivery(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Apply(ctx, creditsGrant("acct", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: "acct", Emails: []string{"a@x.example", "b@x.example"}}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 2, Duration: time.Minute})
	if err != nil || len(ls) != 2 {
		t.Fatalf("Lease: %d, %v", len(ls), err)
	}
	before := time.Now()
	ev := &webhook.Event{ID: "msg_1", Type: webhook.TypeValidationCompleted, Payload: []byte(`{"n":1}`)}
	if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: emailcheck.Result{Email: ls[0].Email}, Event: ev}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Get(ctx, "acct", ls[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Backend().Outbox.(*pgstore.Webhooks)
	ds, err := w.Lease(ctx, webhook.LeaseParams{Now: time.Now().Add(time.Second), Limit: 10, Duration: time.Minute})
	if err != nil || len(ds) != 1 {
		t.Fatalf("webhook Lease: %d, %v", len(ds), err)
	}
	d := ds[0]
	if d.ID != "msg_1" || d.AccountID != "acct" || d.JobID != ls[0].ID || d.Type != webhook.TypeValidationCompleted || string(d.Payload) != `{"n":1}` {
		t.Errorf("delivery %+v does not carry the job's event", d.Event)
	}
	if !d.CreatedAt.Equal(j.CompletedAt) || !d.NextAttempt.Equal(j.CompletedAt) || d.CreatedAt.Before(before.Add(-time.Second)) {
		t.Errorf("event created %v, due %v; want the completion time %v", d.CreatedAt, d.NextAttempt, j.CompletedAt)
	}

	err = s.Complete(ctx, jobsdriver.CompleteParams{ID: ls[1].ID, Token: ls[1].Token, Result: jobs.UnknownResult(ls[1].Email), Refund: 1, Event: ev})
	if !errors.Is(err, webhook.ErrDuplicate) {
		t.Fatalf("completion with a duplicate event id: %v, want ErrDuplicate", err)
	}
	if _, err := s.Heartbeat(ctx, jobsdriver.HeartbeatParams{ID: ls[1].ID, Token: ls[1].Token, Duration: time.Minute}); err != nil {
		t.Fatalf("the lease did not survive: %v", err)
	}
	if n, _ := w.Pending(ctx); n != 1 {
		t.Errorf("%d pending deliveries, want 1", n)
	}
}

// TestMigrateFromFirstSchema upgrades a schema holding data written by the
// first version: undelivered outbox events become pending deliveries, and
// batches recorded without a fingerprint still replay.
func TestMigrateFromFirstSchema(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	first, err := os.ReadFile("migrations/001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	ident := `"` + schema + `"`
	for _, q := range []string{
		`CREATE SCHEMA ` + ident,
		`CREATE TABLE ` + ident + `.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		strings.ReplaceAll(string(first), "{schema}", ident),
		`INSERT INTO ` + ident + `.schema_migrations (version, name) VALUES (1, '001_init.sql')`,
		`INSERT INTO ` + ident + `.credit_balances (account, balance) VALUES ('acct', 7)`,
		`INSERT INTO ` + ident + `.jobs (id, account, email, cost) VALUES (1, 'acct', 'a@x.example', 1), (2, 'acct', 'b@x.example', 1)`,
		`INSERT INTO ` + ident + `.credit_entries (account, delta, reason, reference, idempotency_key) VALUES ('acct', 10, 'grant', '', NULL), ('acct', -3, 'charge', 'k', 'k')`,
		`INSERT INTO ` + ident + `.job_batches (account, idempotency_key, job_ids) VALUES ('acct', 'k', '{1,2,3}')`,
		`INSERT INTO ` + ident + `.outbox (account, job_id, event_id, payload, created_at) VALUES
			('acct', 1, 'evt_1', '\x7b7d', '2030-01-01T00:00:00Z'), ('acct', 2, 'evt_2', '\x7b7d', '2030-01-01T00:00:01Z')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v < 2 {
		t.Fatalf("SchemaVersion = %d, %v; want at least 2", v, err)
	}
	ds, err := s.Backend().Outbox.(*pgstore.Webhooks).Lease(ctx, webhook.LeaseParams{Now: time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC), Limit: 10, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.ID+"/"+d.JobID+"/"+string(d.Payload))
	}
	if want := []string{"evt_1/1/{}", "evt_2/2/{}"}; !slices.Equal(got, want) {
		t.Errorf("leased %v after the upgrade, want %v", got, want)
	}
	// The old batch has no fingerprint: any fingerprint replays it.
	ids, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: "acct", Emails: []string{"a", "b", "c"}, IdempotencyKey: "k", Fingerprint: "fp"})
	if err != nil || !slices.Equal(ids, []string{"1", "2", "3"}) {
		t.Fatalf("replay of an old batch = %v, %v; want its ids", ids, err)
	}
	_, err = s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: "acct", Emails: []string{"a", "b"}, IdempotencyKey: "k", Fingerprint: "fp"})
	if !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("old key with another count = %v, want ErrIdempotencyConflict", err)
	}
}

// TestPruneInBatches prunes more finished deliveries than one statement
// deletes: they all go, over several statements, and the pending ones
// and those finished after the cutoff stay.
func TestPruneInBatches(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	pool := testPool(t)
	ident := `"` + s.Schema() + `"`
	cutoff := time.Now().Add(-time.Hour)
	const old = 25_000
	_, err := pool.Exec(ctx, `
		INSERT INTO `+ident+`.webhook_deliveries (event_id, account_id, created_at, payload, state, next_attempt, finished_at)
		SELECT 'old-' || g, 'acct', $1::timestamptz - interval '1 day', ''::bytea, CASE WHEN g % 2 = 0 THEN 'delivered' ELSE 'dead' END,
		       NULL::timestamptz, $1::timestamptz - g * interval '1 second'
		FROM generate_series(1, $2::int) g
		UNION ALL
		SELECT 'young-' || g, 'acct', $1::timestamptz, '', 'delivered', NULL, $1::timestamptz + interval '1 minute'
		FROM generate_series(1, 10) g
		UNION ALL
		SELECT 'pending-' || g, 'acct', $1::timestamptz - interval '1 day', '', 'pending', $1::timestamptz, NULL
		FROM generate_series(1, 10) g`, cutoff, old)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Backend().Outbox.Prune(ctx, cutoff)
	if err != nil || n != old {
		t.Fatalf("Prune = %d, %v; want %d", n, err, old)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+ident+`.webhook_deliveries`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 20 {
		t.Errorf("%d deliveries left, want the 20 pending or young", left)
	}
}

// TestDeliveryBatchMigration: a batch.completed delivery that an earlier
// release's completion wrote, the batch's counts in the payload (a zero
// byte, then the counts as jsonb prints them), is leased and listed after
// the upgrade with the batch's data and the bytes
// webhook.BatchCompletedPayload gives; one written after the upgrade
// keeps its data in a column of its own, and in the payload as the
// release before the column read it.
func TestDeliveryBatchMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	schema := testSchema(t, pool)
	s, err := pgstore.OpenAtVersion(ctx, pool, schema, pgstore.DeliveryBatchVersion-1)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	// The earlier release's completion statement wrote the counts so.
	if _, err := pool.Exec(ctx, `
		INSERT INTO "`+schema+`".webhook_deliveries (event_id, account_id, type, job_id, created_at, payload, next_attempt)
		VALUES ('msg_old', 'acct', 'batch.completed', '9', $1,
		        '\x00'::bytea || convert_to(jsonb_build_object('batch_id', '7', 'total', 3,
		                                                       'counts', '{"LIKELY": 2, "DISPOSABLE": 1}'::jsonb)::text, 'UTF8'),
		        $1)`, created); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	data := webhook.BatchCompleted{BatchID: "8", Total: 1, Counts: map[string]int{"UNKNOWN": 1}}
	ob := s.Backend().Outbox
	if err := ob.Enqueue(ctx, webhook.Event{ID: "msg_new", AccountID: "acct", Type: webhook.TypeBatchCompleted, JobID: "8", CreatedAt: created, Batch: &data}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"msg_old": `{"type":"batch.completed","timestamp":"2030-01-02T03:04:05.123Z","data":{"batch_id":"7","total":3,"counts":{"DISPOSABLE":1,"LIKELY":2}}}`,
		"msg_new": `{"type":"batch.completed","timestamp":"2030-01-02T03:04:05.123Z","data":{"batch_id":"8","total":1,"counts":{"UNKNOWN":1}}}`,
	}
	ds, err := ob.Lease(ctx, webhook.LeaseParams{Now: created.Add(time.Minute), Limit: 10, Duration: time.Minute})
	if err != nil || len(ds) != 2 {
		t.Fatalf("leased %d deliveries, %v; want 2", len(ds), err)
	}
	listed, err := ob.Deliveries(ctx, webhook.ListParams{AccountID: "acct"})
	if err != nil || len(listed) != 2 {
		t.Fatalf("listed %d deliveries, %v; want 2", len(listed), err)
	}
	for _, d := range append(ds, listed...) {
		if string(d.Payload) != want[d.ID] || d.Batch == nil {
			t.Errorf("%s after the upgrade: %s with batch %+v; want %s", d.ID, d.Payload, d.Batch, want[d.ID])
		}
	}
	var payload []byte
	var batch *string
	if err := pool.QueryRow(ctx, `SELECT payload, batch::text FROM "`+schema+`".webhook_deliveries WHERE event_id = 'msg_new'`).Scan(&payload, &batch); err != nil {
		t.Fatal(err)
	}
	if string(payload) != string(webhook.StoreBatchCompleted(data)) || batch == nil {
		t.Errorf("stored new delivery: payload %q, batch %v; want the data in batch, and in the payload as the release before read it", payload, batch)
	}
}
