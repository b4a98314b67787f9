package pgstore_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// fillDays inserts perDay completed jobs (and one batch of them) for each
// of days days ending yesterday, created and completed within their day,
// straight into the tables.
func fillDays(t testing.TB, pool *pgxpool.Pool, schema string, now time.Time, days, perDay int) {
	t.Helper()
	ctx := context.Background()
	ident := `"` + schema + `"`
	for i := days; i >= 1; i-- {
		start := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -i)
		_, err := pool.Exec(ctx, `
			WITH ids AS (
				SELECT g, ((floor(extract(epoch FROM $1::timestamptz))::bigint / 86400) << 32)
				          | (nextval('`+ident+`.jobs_id_seq') & 4294967295) AS id
				FROM generate_series(1, $2::int) AS g
			), b AS (SELECT min(id) AS first FROM ids)
			, ins AS (
				INSERT INTO `+ident+`.jobs (id, account, email, state, cost, result, created_at, completed_at, batch_id)
				SELECT ids.id, 'acct', 'user' || g || '@example.org', 'completed', 1, '{}'::jsonb,
				       $1::timestamptz + (g % 3600) * interval '1 second',
				       $1::timestamptz + (g % 3600) * interval '1 second' + interval '1 minute', b.first
				FROM ids, b
				RETURNING batch_id
			)
			INSERT INTO `+ident+`.batches (id, account, total, completed, created_at, completed_at)
			SELECT first, 'acct', $2, $2, $1, $1::timestamptz + interval '2 hours' FROM b`, start, perDay)
		if err != nil {
			t.Fatalf("fill day -%d: %v", i, err)
		}
	}
}

// jobCount counts the jobs of the store's schema.
func jobCount(t testing.TB, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM "`+schema+`".jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// tableBytes is the size on disk of a partitioned table with its
// partitions and indexes.
func tableBytes(t testing.TB, pool *pgxpool.Pool, schema, table string) int64 {
	t.Helper()
	var n int64
	err := pool.QueryRow(context.Background(), `
		SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree($1::regclass)`,
		`"`+schema+`".`+table).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// partitionCount counts table's partitions, the default one included.
func partitionCount(t testing.TB, pool *pgxpool.Pool, schema, table string) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `
		SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`, `"`+schema+`".`+table).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRetentionDropsPartitions fills ten past days of completed jobs and
// keeps three: the seven oldest days leave as dropped partitions, except
// the rows of a day that still holds an active job, and nothing younger
// than the cutoff's day goes.
func TestRetentionDropsPartitions(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	now := time.Now()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	// The partitions of the past days, as a service running then made them.
	for back := 10; back >= 1; back-- {
		if err := s.EnsurePartitions(ctx, now.AddDate(0, 0, -back)); err != nil {
			t.Fatal(err)
		}
	}
	const perDay = 2000
	fillDays(t, pool, schema, now, 10, perDay)
	// A job eight days old still active: its day's partition must stay.
	late := insertJobOfDay(t, pool, schema, now.AddDate(0, 0, -8))
	if n := jobCount(t, pool, schema); n != 10*perDay+1 {
		t.Fatalf("%d jobs filled, want %d", n, 10*perDay+1)
	}
	partsBefore := partitionCount(t, pool, schema, "jobs")

	cutoff := now.AddDate(0, 0, -3)
	n, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: cutoff})
	if err != nil {
		t.Fatal(err)
	}
	// Days -10 … -4 end by the cutoff's day: 7 days of jobs go, the active
	// one stays.
	if want := 7 * perDay; n != want {
		t.Errorf("Cleanup removed %d jobs, want %d", n, want)
	}
	if got, want := jobCount(t, pool, schema), 3*perDay+1; got != want {
		t.Errorf("%d jobs left, want %d", got, want)
	}
	if j, err := s.Get(ctx, "acct", late); err != nil || j.State != jobtype.StateActive {
		t.Errorf("the old active job after cleanup: %+v, %v", j, err)
	}
	// Days -11 … -4 end by then: seven partitions dropped (-11 was
	// empty); the active job's day is kept, emptied of the rest.
	if got := partitionCount(t, pool, schema, "jobs"); got != partsBefore-7 {
		t.Errorf("%d partitions after cleanup, want %d", got, partsBefore-7)
	}
	var batches int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".batches`).Scan(&batches); err != nil {
		t.Fatal(err)
	}
	if batches != 3+1 { // three days kept, and the active job's own batch
		t.Errorf("%d batches left, want 4", batches)
	}
	// Once the late job completes, its day goes whole at the next cleanup.
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease the late job: %v, %v", ls, err)
	}
	if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: jobs.UnknownResult(ls[0].Email)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: cutoff}); err != nil {
		t.Fatal(err)
	}
	if got := partitionCount(t, pool, schema, "jobs"); got != partsBefore-7 {
		t.Errorf("%d partitions while the late job's completion is young, want %d", got, partsBefore-7)
	}
	if _, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: now.AddDate(0, 0, 2)}); err != nil {
		t.Fatal(err)
	}
	if got := jobCount(t, pool, schema); got != 0 {
		t.Errorf("%d jobs left after a cleanup past them all", got)
	}
}

// TestPartitionsAheadFromTwoProcesses makes the partitions of the days
// ahead from two stores at once, and moves into a new day's partition
// what the default partition held for it.
func TestPartitionsAheadFromTwoProcesses(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	a, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	// A job of a day no partition covers yet lands in the default one.
	far := time.Now().AddDate(0, 0, 30)
	id := insertJobOfDay(t, pool, schema, far)
	errs := make(chan error, 2)
	for _, s := range []*pgstore.Store{a, b} {
		go func() { errs <- s.EnsurePartitions(ctx, far) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Whichever process got the lock did the work; the other returned.
	if err := b.EnsurePartitions(ctx, far); err != nil {
		t.Fatal(err)
	}
	var inDefault, inDay int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".jobs_default`).Scan(&inDefault); err != nil {
		t.Fatal(err)
	}
	name := "jobs_p" + far.UTC().Format("20060102")
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".`+name).Scan(&inDay); err != nil {
		t.Fatal(err)
	}
	if inDefault != 0 || inDay != 1 {
		t.Errorf("default partition holds %d, %s holds %d; want 0 and 1", inDefault, name, inDay)
	}
	if j, err := a.Get(ctx, "acct", id); err != nil || j.Email != "late@example.org" {
		t.Errorf("the moved job: %+v, %v", j, err)
	}
}

// TestMigrateToPartitions fills a schema of the release before the
// partitions (jobs over forty days, active and completed, batches,
// deliveries, ledger entries), upgrades it, and finds every row as it was,
// the job ids going on above the old ones, and the old rows gone whole
// once they have aged out.
func TestMigrateToPartitions(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	old, err := pgstore.OpenAtVersion(ctx, pool, schema, pgstore.PartitionsVersion-1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ident := `"` + schema + `"`
	for _, q := range []string{
		`INSERT INTO ` + ident + `.credit_balances (account, balance) VALUES ('acct', 7)`,
		`INSERT INTO ` + ident + `.credit_entries (account, delta, reason) VALUES ('acct', 10, 'grant'), ('acct', -3, 'charge')`,
		`INSERT INTO ` + ident + `.webhook_deliveries (event_id, account_id, type, job_id, created_at, payload, next_attempt)
		 VALUES ('evt_1', 'acct', 'validation.completed', '1', now(), '\x7b7d', now())`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	// Forty batches of two jobs over forty days, as the release before
	// wrote them (ids from the sequence), thirty of them completed.
	for _, q := range []string{`
		INSERT INTO ` + ident + `.jobs (account, email, cost, batch_id, created_at)
		SELECT 'acct', 'u' || g || '-' || k || '@example.org', 1, 0, now() - g * interval '1 day'
		FROM generate_series(0, 39) AS g, generate_series(1, 2) AS k ORDER BY g, k`, `
		UPDATE ` + ident + `.jobs SET batch_id = firsts.first
		FROM (SELECT created_at, min(id) AS first FROM ` + ident + `.jobs GROUP BY created_at) AS firsts
		WHERE jobs.created_at = firsts.created_at`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO `+ident+`.batches (id, account, total, created_at)
		SELECT batch_id, 'acct', 2, min(created_at) FROM `+ident+`.jobs GROUP BY batch_id`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		WITH done AS (
			UPDATE `+ident+`.jobs SET state = 'completed', result = '{"confidence":{"status":"UNKNOWN"}}', completed_at = now()
			WHERE id IN (SELECT id FROM `+ident+`.jobs ORDER BY id LIMIT 60) RETURNING batch_id
		)
		UPDATE `+ident+`.batches b SET completed = n.c, completed_at = CASE WHEN n.c = b.total THEN now() END
		FROM (SELECT batch_id, count(*) AS c FROM done GROUP BY batch_id) n WHERE b.id = n.batch_id`); err != nil {
		t.Fatal(err)
	}
	var batch []string
	rows, err := pool.Query(ctx, `SELECT id::text FROM `+ident+`.batches ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	batch, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(batch) != 40 {
		t.Fatalf("%d batches filled (%v), want 40", len(batch), err)
	}
	before := dumpTables(t, old)

	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	after := dumpTables(t, s)
	// Batches gained a name and a number (migration 015); the rest stays.
	numbered := regexp.MustCompile(`,"name":null,"number":[0-9]+}$`)
	for i, b := range after["batches"] {
		after["batches"][i] = numbered.ReplaceAllString(b, "}")
	}
	// Jobs gained their turn (migration 017): 0 for the finished ones,
	// 1, 2, … in id order for an account's waiting ones; whether they
	// wait for a later run-at (migration 019: none here); and their count
	// of unjudged attempts (migration 028: none here).
	turned := regexp.MustCompile(`,"turn":[0-9]+,"delayed":false,"unjudged":0}$`)
	for i, j := range after["jobs"] {
		if strings.Contains(j, `"state":"completed"`) && !strings.HasSuffix(j, `,"turn":0,"delayed":false,"unjudged":0}`) {
			t.Errorf("completed job given a turn: %s", j)
		}
		after["jobs"][i] = turned.ReplaceAllString(j, "}")
	}
	slices.Sort(after["jobs"])
	// Deliveries gained a batch.completed event's data (migration 032:
	// none here).
	for i, d := range after["webhook_deliveries"] {
		after["webhook_deliveries"][i] = strings.TrimSuffix(d, `,"batch":null}`) + "}"
	}
	for _, table := range []string{"jobs", "batches", "webhook_deliveries", "credit_entries", "credit_balances"} {
		if len(before[table]) == 0 {
			t.Errorf("%s: nothing filled before the upgrade", table)
		}
		if !slices.Equal(before[table], after[table]) {
			t.Errorf("%s changed in the upgrade:\nbefore %v\nafter  %v", table, before[table], after[table])
		}
	}
	var legacy int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+ident+`.jobs_legacy`).Scan(&legacy); err != nil || legacy != 80 {
		t.Errorf("jobs_legacy holds %d jobs (%v), want all 80 from before", legacy, err)
	}
	// Ids go on from the old sequence, and the upgraded store works.
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"new@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := strconv.Atoi(batch[len(batch)-1])
	if id, _ := strconv.Atoi(ids[0]); id <= last+1 {
		t.Errorf("new job id %d, want past the old ones (last batch %d)", id, last)
	}
	for range 40 {
		ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: jobs.UnknownResult(l.Email)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range batch {
		b, err := s.Batch(ctx, "acct", id)
		if err != nil || b.State != jobtype.StateCompleted {
			t.Fatalf("batch %s after the upgrade: %+v, %v", id, b, err)
		}
	}
	n, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: now.AddDate(0, 0, 2)})
	if err != nil || n != 81 {
		t.Fatalf("cleanup past everything: %d, %v; want 81", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname = 'jobs_legacy' AND relnamespace = $1::regnamespace`, ident).Scan(&legacy); err != nil || legacy != 0 {
		t.Errorf("jobs_legacy still there (%d, %v) once its rows aged out", legacy, err)
	}
}

// insertJobOfDay writes an available job whose id is of day d, straight
// into the table, and returns its id.
func insertJobOfDay(t testing.TB, pool *pgxpool.Pool, schema string, d time.Time) string {
	t.Helper()
	ident := `"` + schema + `"`
	var id int64
	err := pool.QueryRow(context.Background(), `
		WITH n AS (SELECT ((floor(extract(epoch FROM $1::timestamptz))::bigint / 86400) << 32)
		                  | (nextval('`+ident+`.jobs_id_seq') & 4294967295) AS id)
		, b AS (INSERT INTO `+ident+`.batches (id, account, total, created_at) SELECT id, 'acct', 1, $1 FROM n)
		INSERT INTO `+ident+`.jobs (id, account, email, created_at, batch_id)
		SELECT id, 'acct', 'late@example.org', $1, id FROM n RETURNING id`, d).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	if got := pgstore.DayOfID(id); !got.Equal(d.UTC().Truncate(24 * time.Hour)) {
		t.Fatalf("job %d is of day %v, want %v", id, got, d)
	}
	return strconv.FormatInt(id, 10)
}

// dumpTables returns each table's rows as sorted JSON strings.
func dumpTables(t *testing.T, s *pgstore.Store) map[string][]string {
	t.Helper()
	raw, err := s.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var tables map[string][]json.RawMessage
	if err := json.Unmarshal(raw, &tables); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for name, rows := range tables {
		for _, r := range rows {
			out[name] = append(out[name], string(r))
		}
		slices.Sort(out[name])
	}
	return out
}

// TestRetentionAtVolume is the steady state at volume: ten days of a few
// million completed jobs, then a cleanup a day for a week with three days
// kept. Each cleanup's time and the table's size are logged; the size
// returns to three days' worth. It runs when VALIDMAIL_HUGE is set.
func TestRetentionAtVolume(t *testing.T) {
	if os.Getenv("VALIDMAIL_HUGE") == "" {
		t.Skip("VALIDMAIL_HUGE not set: skipping the volume test")
	}
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for back := 10; back >= 1; back-- {
		if err := s.EnsurePartitions(ctx, now.AddDate(0, 0, -back)); err != nil {
			t.Fatal(err)
		}
	}
	perDay := 300_000
	if v, err := strconv.Atoi(os.Getenv("VALIDMAIL_HUGE")); err == nil && v > 1 {
		perDay = v
	}
	start := time.Now()
	fillDays(t, pool, schema, now, 10, perDay)
	t.Logf("filled %d completed jobs over 10 days in %v; jobs table %d MiB",
		10*perDay, time.Since(start).Round(time.Millisecond), tableBytes(t, pool, schema, "jobs")>>20)
	for back := 7; back >= 0; back-- {
		cutoff := now.AddDate(0, 0, -3-back)
		start := time.Now()
		n, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: cutoff})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("cleanup keeping 3 days before %s: %d jobs in %v; jobs table now %d MiB",
			cutoff.Format(time.DateOnly), n, time.Since(start).Round(time.Millisecond), tableBytes(t, pool, schema, "jobs")>>20)
	}
	if got, want := jobCount(t, pool, schema), 3*perDay; got != want {
		t.Errorf("%d jobs left, want %d", got, want)
	}
}

// TestCleanupFromTwoProcesses runs retention from two stores on one schema
// at once, as every instance of a deployment does: neither fails when the
// other dropped a partition first, and between them the expired days go
// exactly once.
func TestCleanupFromTwoProcesses(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	now := time.Now()
	var stores []*pgstore.Store
	for range 2 {
		s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	if err := stores[0].EnsurePartitions(ctx, now.AddDate(0, 0, -10)); err != nil {
		t.Fatal(err)
	}
	if err := stores[0].EnsurePartitions(ctx, now.AddDate(0, 0, -4)); err != nil {
		t.Fatal(err)
	}
	const perDay = 50
	fillDays(t, pool, schema, now, 10, perDay)
	cutoff := now.AddDate(0, 0, -3)
	type result struct {
		n   int
		err error
	}
	results := make(chan result, 2*len(stores))
	for round := range 2 {
		for _, s := range stores {
			go func() {
				n, err := s.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: cutoff.Add(time.Duration(round) * time.Millisecond)})
				results <- result{n, err}
			}()
		}
	}
	removed := 0
	for range 2 * len(stores) {
		r := <-results
		if r.err != nil {
			t.Errorf("Cleanup beside another: %v", r.err)
		}
		removed += r.n
	}
	if want := 7 * perDay; removed != want {
		t.Errorf("the cleanups removed %d jobs between them, want %d", removed, want)
	}
	if got, want := jobCount(t, pool, schema), 3*perDay; got != want {
		t.Errorf("%d jobs left, want %d", got, want)
	}
}

// TestPartitionMadeWhileWorkersRun makes today's partition while today's
// jobs wait in the default partition and workers lease and complete them,
// as a store opening beside running instances does: the move does not
// deadlock with the workers, and every job stays.
func TestPartitionMadeWhileWorkersRun(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	// Today without a partition: its jobs land in the default one.
	ident := `"` + schema + `"`
	today := time.Now().UTC().Format("20060102")
	for _, table := range []string{"jobs", "batches"} {
		if _, err := pool.Exec(ctx, `DROP TABLE `+ident+`.`+table+`_p`+today); err != nil {
			t.Fatal(err)
		}
	}
	const total = 3000
	for b := range total / 500 {
		emails := make([]string, 500)
		for i := range emails {
			emails[i] = "u" + strconv.Itoa(b) + "-" + strconv.Itoa(i) + "@example.org"
		}
		if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: emails}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	workerErrs := make(chan error, 8)
	for range 8 {
		go func() {
			for wctx.Err() == nil {
				ls, err := s.Lease(wctx, jobsdriver.LeaseParams{Max: 20, Duration: time.Minute})
				if err != nil {
					workerErrs <- err
					return
				}
				ps := make([]jobsdriver.CompleteParams, len(ls))
				for i, l := range ls {
					ps[i] = jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: jobs.UnknownResult(l.Email)}
				}
				if len(ps) > 0 {
					s.CompleteMany(wctx, ps)
				}
			}
			workerErrs <- nil
		}()
	}
	// Let the workers get going on the default partition's rows.
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+ident+`.jobs WHERE state <> 'available'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 || time.Now().After(deadline) {
			break
		}
	}
	if err := s.EnsurePartitions(ctx, time.Now()); err != nil {
		t.Errorf("EnsurePartitions beside running workers: %v", err)
	}
	stop()
	for range 8 {
		if err := <-workerErrs; err != nil && wctx.Err() == nil {
			t.Errorf("a worker: %v", err)
		}
	}
	var inDefault int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+ident+`.jobs_default`).Scan(&inDefault); err != nil {
		t.Fatal(err)
	}
	if inDefault != 0 {
		t.Errorf("%d jobs still in the default partition once today's was made", inDefault)
	}
	if got := jobCount(t, pool, schema); got != total {
		t.Errorf("%d jobs after the move, want %d", got, total)
	}
}
