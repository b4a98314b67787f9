package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// TestDelayedMigration: a job an earlier release left waiting for a later
// run-at is delayed after the upgrade: leases pass it by, without reading
// it, until its run-at comes, and then hand it out, also when its account
// has no place in the fair order yet.
func TestDelayedMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	schema := testSchema(t, pool)
	s, err := pgstore.OpenAtVersion(ctx, pool, schema, pgstore.DelayedVersion-1)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, strings.ReplaceAll(sql, "{schema}", `"`+schema+`"`)); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org", "b@example.org", "c@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE {schema}.jobs SET run_at = now() + interval '1 hour' WHERE id = ` + ids[0])

	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var delayed []string
	rows, err := pool.Query(ctx, `SELECT id::text FROM "`+schema+`".jobs WHERE delayed`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		delayed = append(delayed, id)
	}
	if rows.Err() != nil || !slices.Equal(delayed, ids[:1]) {
		t.Fatalf("delayed after the upgrade: %v (%v), want %v", delayed, rows.Err(), ids[:1])
	}
	leaseIDs := func() []string {
		t.Helper()
		ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range ls {
			out = append(out, l.ID)
		}
		return out
	}
	if got := leaseIDs(); !slices.Equal(got, ids[1:]) {
		t.Fatalf("leased %v, want %v: the delayed job waits", got, ids[1:])
	}
	// Its account's place in the fair order may be missing too (jobs
	// from before turns were kept): it is given one.
	exec(`DELETE FROM {schema}.job_turns`)
	exec(`UPDATE {schema}.jobs SET run_at = now() - interval '1 second' WHERE id = ` + ids[0])
	deadline := time.Now().Add(time.Minute)
	for {
		got := leaseIDs()
		if slices.Equal(got, ids[:1]) {
			break
		}
		if len(got) > 0 || time.Now().After(deadline) {
			t.Fatalf("leased %v once its run-at came, want %v", got, ids[:1])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUnjudgedMigration: jobs an earlier release handed back after
// unjudged attempts, the count written at the end of their last error,
// carry that count in their own field after the upgrade; other failures
// carry none, and the error text is left as it was.
func TestUnjudgedMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	schema := testSchema(t, pool)
	s, err := pgstore.OpenAtVersion(ctx, pool, schema, pgstore.UnjudgedVersion-1)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org", "b@example.org", "c@example.org", "d@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	// What the earlier release's pool recorded: two unjudged attempts, an
	// unjudged attempt then a rescued lease, and a validation error.
	lastErrors := map[string]string{
		ids[0]: "no nameserver answered for the domain (unjudged attempt 2 of 3)",
		ids[1]: "lease expired",
		ids[2]: "context deadline exceeded",
	}
	for id, msg := range lastErrors {
		if _, err := pool.Exec(ctx, `UPDATE "`+schema+`".jobs SET errors = 2, last_error = $1 WHERE id = $2::bigint`, msg, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
	if err != nil || len(ls) != len(ids) {
		t.Fatalf("leased %d jobs, %v; want %d", len(ls), err, len(ids))
	}
	want := map[string]int{ids[0]: 2}
	for _, l := range ls {
		if l.Unjudged != want[l.ID] || l.LastError != lastErrors[l.ID] {
			t.Errorf("job %s after the upgrade: unjudged %d, last error %q; want %d, %q", l.ID, l.Unjudged, l.LastError, want[l.ID], lastErrors[l.ID])
		}
	}
}

// A lease reads the turn index in order and stops after the jobs it
// leases, even while the statistics of the day's partition still say it
// is empty (before its first analyze after a large enqueue), rather than
// read and sort every ready job.
func TestLeasePlanReadsTheTurnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	emails := make([]string, 1000)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@example.org", i)
	}
	for range 20 {
		if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "big", Emails: emails}); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := s.ExplainLease(ctx, 32)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "turn_id_idx") || strings.Contains(plan, "Sort Key: jobs.turn") {
		t.Fatalf("the lease does not read the turn index in order:\n%s", plan)
	}
}
