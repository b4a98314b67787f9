package pgstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/webhook"
)

// A lease's planner and commit settings stay in its own transaction: the
// connection it used answers the next statement with the server's
// settings, also after a lease that failed half-way, and the next lease
// on that connection works.
func TestLeaseSettingsStayInTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	shared := testPool(t)
	schema := testSchema(t, shared)
	cfg, err := pgxpool.ParseConfig(os.Getenv(envPostgres))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200ms"
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	s, err := pgstore.New(ctx, one, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	settings := func() string {
		t.Helper()
		var sc, sort, jit string
		if err := one.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('enable_sort'), current_setting('jit')`).Scan(&sc, &sort, &jit); err != nil {
			t.Fatal(err)
		}
		return sc + " " + sort + " " + jit
	}
	want := settings()
	if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org", "b@example.org"}}); err != nil {
		t.Fatal(err)
	}
	lease := func() ([]jobsdriver.Lease, error) {
		return s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
	}
	if ls, err := lease(); err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v, %v", ls, err)
	}
	if got := settings(); got != want {
		t.Fatalf("after a lease the connection has %q, want %q", got, want)
	}

	// A lease that fails inside its transaction: the jobs are locked by
	// another transaction past the lease's lock timeout.
	tx, err := shared.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE "`+schema+`".jobs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_, err = lease()
	tx.Rollback(ctx)
	if err == nil {
		t.Fatal("a lease of locked jobs went through")
	}
	if got := settings(); got != want {
		t.Fatalf("after a failed lease the connection has %q, want %q", got, want)
	}
	if ls, err := lease(); err != nil || len(ls) != 1 {
		t.Fatalf("the lease after a failed one: %v, %v", ls, err)
	}
}

// A lease lost with a crash of the database (its commit was not waited
// for) while its worker goes on with the job: the worker's completion
// finds the lease gone and writes nothing, the job is leased again, and
// the job is completed, refunded, counted in its batch and announced
// exactly once, whichever way it is completed.
func TestLostLeaseCompletesOnce(t *testing.T) {
	t.Parallel()
	for _, many := range []bool{false, true} {
		name := "Complete"
		if many {
			name = "CompleteMany"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := testPool(t)
			schema := testSchema(t, pool)
			s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			sql := func(q string) string { return strings.ReplaceAll(q, "{schema}", `"`+schema+`"`) }
			ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org", "b@example.org"}, Cost: 1})
			if err != nil {
				t.Fatal(err)
			}
			ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 2, Duration: time.Minute})
			if err != nil || len(ls) != 2 {
				t.Fatalf("lease: %v, %v", ls, err)
			}
			// The crash takes the lease of the first job: it is as it
			// was before.
			if _, err := pool.Exec(ctx, sql(`UPDATE {schema}.jobs SET state = 'available', token = NULL, lease_expires_at = NULL WHERE id = $1`), ids[0]); err != nil {
				t.Fatal(err)
			}
			complete := func(ps ...jobsdriver.CompleteParams) []error {
				if many {
					return s.CompleteMany(ctx, ps)
				}
				errs := make([]error, len(ps))
				for i, p := range ps {
					errs[i] = s.Complete(ctx, p)
				}
				return errs
			}
			params := func(l jobsdriver.Lease, attempt string) jobsdriver.CompleteParams {
				r := emailcheck.Result{Email: l.Email}
				r.Confidence.Status = emailcheck.StatusUnknown
				return jobsdriver.CompleteParams{
					ID: l.ID, Token: l.Token, Result: r, Refund: 1,
					Event:      &webhook.Event{ID: "evt_" + l.ID + "_" + attempt, Type: "test.completed", Payload: []byte(`{}`)},
					BatchEvent: &webhook.Event{ID: "bevt_" + l.ID + "_" + attempt, Type: "batch.completed", CreatedAt: time.Now()},
				}
			}
			// The first worker finishes both jobs.
			errs := complete(params(ls[0], "1"), params(ls[1], "1"))
			if !errors.Is(errs[0], jobtype.ErrLeaseLost) || errs[1] != nil {
				t.Fatalf("completions after the lost lease: %v; want lease lost, then nil", errs)
			}
			again, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 2, Duration: time.Minute})
			if err != nil || len(again) != 1 || again[0].ID != ids[0] {
				t.Fatalf("lease after the crash: %+v, %v; want job %s", again, err, ids[0])
			}
			// The first worker tries again with its old token, then
			// the second one completes the job.
			if errs := complete(params(ls[0], "1b")); !errors.Is(errs[0], jobtype.ErrLeaseLost) {
				t.Fatalf("completion with the lost token: %v", errs[0])
			}
			if errs := complete(params(again[0], "2")); errs[0] != nil {
				t.Fatal(errs[0])
			}
			if errs := complete(params(again[0], "3")); !errors.Is(errs[0], jobtype.ErrLeaseLost) {
				t.Fatalf("second completion with the same token: %v", errs[0])
			}
			var refunds, balance, sum, events, batchEvents, completed int64
			err = pool.QueryRow(ctx, sql(`SELECT
				(SELECT count(*) FROM {schema}.credit_entries WHERE reason = 'refund'),
				(SELECT coalesce(sum(balance), 0) FROM {schema}.credit_balances WHERE account = 'acct'),
				(SELECT coalesce(sum(delta), 0) FROM {schema}.credit_entries WHERE account = 'acct'),
				(SELECT count(*) FROM {schema}.webhook_deliveries WHERE type = 'test.completed'),
				(SELECT count(*) FROM {schema}.webhook_deliveries WHERE type = 'batch.completed'),
				(SELECT completed FROM {schema}.batches WHERE id = $1)`), ids[0]).Scan(&refunds, &balance, &sum, &events, &batchEvents, &completed)
			if err != nil {
				t.Fatal(err)
			}
			if refunds != 2 || balance != 2 || sum != 2 || events != 2 || batchEvents != 1 || completed != 2 {
				t.Fatalf("refunds %d, balance %d, entries' sum %d, job events %d, batch events %d, batch completed %d; want 2, 2, 2, 2, 1, 2",
					refunds, balance, sum, events, batchEvents, completed)
			}
			for _, id := range ids {
				j, err := s.Get(ctx, "acct", id)
				if err != nil || j.State != jobtype.StateCompleted {
					t.Fatalf("job %s: %+v, %v", id, j, err)
				}
			}
		})
	}
}
