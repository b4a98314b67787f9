package pgstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// partitionExists reports whether the named table is in schema.
func partitionExists(t testing.TB, pool *pgxpool.Pool, schema, name string) bool {
	t.Helper()
	var ok bool
	err := pool.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, `"`+schema+`".`+name).Scan(&ok)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// waitingLocks counts the lock requests on schema's tables not granted.
func waitingLocks(t testing.TB, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `
		SELECT count(*) FROM pg_locks l
		JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE NOT l.granted AND n.nspname = $1`, schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// leaseWithin locks an available job the way a lease does, on a session
// that waits for its locks at most d.
func leaseWithin(ctx context.Context, pool *pgxpool.Pool, schema string, d time.Duration) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, strconv.FormatInt(d.Milliseconds(), 10)+"ms"); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `SELECT id FROM "`+schema+`".jobs WHERE state = 'available' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`)
	return err
}

// TestCleanupPassesBusyPartitions holds locks that a partition's drop
// conflicts with, as a long query does, while Cleanup runs: Cleanup
// returns without an error and without waiting for the query, the
// partition stays, leases go on meanwhile, and a later Cleanup drops it
// once the query is over.
func TestCleanupPassesBusyPartitions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// hold is the long query's statement; it names the schema and
		// the oldest expired partition of jobs.
		hold func(schema, oldest string) string
	}{
		// A reader of one day's partition: the drop cannot lock it.
		{"reader of the partition", func(schema, oldest string) string {
			return `SELECT count(*) FROM "` + schema + `".` + oldest
		}},
		// A reader of the whole table: the drop cannot lock the parent,
		// and every lease queued behind its wait would wait as long.
		{"reader of the table", func(schema, _ string) string {
			return `LOCK TABLE "` + schema + `".jobs IN ACCESS SHARE MODE`
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool := testPool(t)
			schema := testSchema(t, pool)
			ctx := context.Background()
			now := time.Now()
			s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.EnsurePartitions(ctx, now.AddDate(0, 0, -4)); err != nil {
				t.Fatal(err)
			}
			const perDay = 100
			fillDays(t, pool, schema, now, 4, perDay) // days -4 … -1
			if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org", "b@example.org"}}); err != nil {
				t.Fatal(err)
			}
			oldest := "jobs_p" + now.UTC().AddDate(0, 0, -4).Format("20060102")

			reader, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Rollback(ctx)
			if _, err := reader.Exec(ctx, c.hold(schema, oldest)); err != nil {
				t.Fatal(err)
			}

			// Days -5 … -3 end by the cutoff's day -2 (-5 empty).
			cutoff := now.AddDate(0, 0, -2)
			cleaned := make(chan error, 1)
			go func() {
				_, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: cutoff})
				cleaned <- err
			}()
			// While the cleanup waits for a lock, if it is seen to, the
			// jobs stay open to leasing: a lease's lock waits at most a
			// second, ten times the cleanup's wait and half what a drop
			// once waited.
			var cleanupErr error
		watch:
			for {
				select {
				case cleanupErr = <-cleaned:
					break watch
				default:
				}
				if waitingLocks(t, pool, schema) > 0 {
					if err := leaseWithin(ctx, pool, schema, time.Second); err != nil {
						t.Errorf("a lease while the cleanup waits for a lock: %v", err)
					}
					cleanupErr = <-cleaned
					break
				}
			}
			if cleanupErr != nil {
				t.Fatalf("Cleanup beside a long query: %v", cleanupErr)
			}
			// Cleanup came back with the query still open: it gave up
			// the drop rather than wait for it.
			if !partitionExists(t, pool, schema, oldest) {
				t.Fatalf("%s dropped while a query held it", oldest)
			}
			if waiting := waitingLocks(t, pool, schema); waiting != 0 {
				t.Errorf("%d lock requests still waiting once Cleanup returned", waiting)
			}
			if _, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute}); err != nil {
				t.Errorf("a lease after the cleanup: %v", err)
			}

			if err := reader.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: cutoff}); err != nil {
				t.Fatal(err)
			}
			for back := 4; back >= 3; back-- {
				name := "jobs_p" + now.UTC().AddDate(0, 0, -back).Format("20060102")
				if partitionExists(t, pool, schema, name) {
					t.Errorf("%s still there once the query ended", name)
				}
			}
			if got, want := jobCount(t, pool, schema), 2*perDay+2; got != want {
				t.Errorf("%d jobs left, want %d", got, want)
			}
		})
	}
}

// TestRetentionChecksWithoutScans drops a day's partitions whose rows are
// all expired, and keeps one holding a single row to keep, of each state
// that keeps a row, found through the partial indexes.
func TestRetentionChecksWithoutScans(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	now := time.Now()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsurePartitions(ctx, now.AddDate(0, 0, -6)); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsurePartitions(ctx, now.AddDate(0, 0, -3)); err != nil {
		t.Fatal(err)
	}
	fillDays(t, pool, schema, now, 6, 50) // days -6 … -1
	ident := `"` + schema + `"`
	// Day -6 keeps an available job, -5 a running one, -4 a batch not
	// finished; day -3 goes whole.
	insertJobOfDay(t, pool, schema, now.AddDate(0, 0, -6))
	running := insertJobOfDay(t, pool, schema, now.AddDate(0, 0, -5))
	if _, err := pool.Exec(ctx, `UPDATE `+ident+`.jobs SET state = 'running', token = 't', lease_expires_at = now() + interval '1 hour'
		WHERE id = $1`, running); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE `+ident+`.batches SET completed_at = NULL WHERE id >> 32 = $1`,
		now.UTC().AddDate(0, 0, -4).Unix()/86400); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: now.AddDate(0, 0, -2)}); err != nil {
		t.Fatal(err)
	}
	for back, want := range map[int]bool{6: true, 5: true, 3: false} {
		name := "jobs_p" + now.UTC().AddDate(0, 0, -back).Format("20060102")
		if got := partitionExists(t, pool, schema, name); got != want {
			t.Errorf("%s there: %v, want %v", name, got, want)
		}
	}
	for back, want := range map[int]bool{4: true, 3: false} {
		name := "batches_p" + now.UTC().AddDate(0, 0, -back).Format("20060102")
		if got := partitionExists(t, pool, schema, name); got != want {
			t.Errorf("%s there: %v, want %v", name, got, want)
		}
	}
	// Days -6 and -5 keep their one active job each; -1 and -2 stay whole.
	if got, want := jobCount(t, pool, schema), 2+2*50; got != want {
		t.Errorf("%d jobs left, want %d", got, want)
	}
}
