package pgstore_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// TestLeaseReachesOlderPartitions keeps a day-old job among many of
// today's: it is leased first whenever it is available, as it becomes
// again after a retry and after its lease expires, from the store that
// leased it and from another, though today's partition alone could fill
// every lease.
func TestLeaseReachesOlderPartitions(t *testing.T) {
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
	old := insertJobOfDay(t, pool, schema, time.Now().AddDate(0, 0, -1))
	emails := make([]string, 200)
	for i := range emails {
		emails[i] = "new@example.org"
	}
	// Another account's, so that the old job's turns come before them
	// after its retry too.
	if _, err := a.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "new-acct", Emails: emails}); err != nil {
		t.Fatal(err)
	}
	// leaseOld leases from s and wants the old job first.
	leaseOld := func(step string, s *pgstore.Store, d time.Duration) jobsdriver.Lease {
		t.Helper()
		ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: d})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if len(ls) != 10 || ls[0].ID != old {
			ids := make([]string, len(ls))
			for i, l := range ls {
				ids[i] = l.ID
			}
			t.Fatalf("%s: leased %v, want 10 jobs starting with the day-old %s", step, ids, old)
		}
		return ls[0]
	}

	l := leaseOld("first lease", a, time.Minute)
	if err := a.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, Error: "try again"}); err != nil {
		t.Fatal(err)
	}
	l = leaseOld("lease after a retry", a, time.Minute)
	// The floor read again while the old job runs stays at its day.
	oldID, _ := strconv.ParseInt(old, 10, 64)
	if first, _ := a.LeaseRange(ctx, time.Now().Add(time.Hour)); first > oldID {
		t.Errorf("leases look first from id %d, above the running job %d", first, oldID)
	}
	if err := a.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token}); err != nil {
		t.Fatal(err)
	}
	l = leaseOld("lease from another store after a retry", b, time.Millisecond)
	// Its lease expires, and a rescue makes it available again.
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := b.RescueExpired(ctx, jobsdriver.RescueParams{})
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old job's lease never expired")
		}
		time.Sleep(10 * time.Millisecond)
	}
	l = leaseOld("lease after a rescue", a, time.Minute)
	if err := a.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: jobs.UnknownResult(l.Email)}); err != nil {
		t.Fatal(err)
	}

	// With nothing old left unfinished, leases look at today's partition
	// first (from yesterday's within the first hour of a day, for the
	// enqueuings that began before midnight)...
	// Past the store's next reading of the floor: two hours on, as the
	// reading above was asked an hour on.
	now := time.Now().Add(2 * time.Hour)
	first, last := a.LeaseRange(ctx, now)
	today := now.UTC().Truncate(24 * time.Hour)
	if from := pgstore.DayOfID(first); from.Before(today.AddDate(0, 0, -1)) || first == 0 {
		t.Errorf("leases look first from day %v (id %d), want today %v", from, first, today)
	}
	if to := pgstore.DayOfID(last); !to.Equal(today) || last == math.MaxInt64 {
		t.Errorf("leases look first up to day %v (id %d), want today %v", to, last, today)
	}
	// ...yet a job below that range, written where the store did not
	// look, is leased once the range runs short.
	older := insertJobOfDay(t, pool, schema, time.Now().AddDate(0, 0, -2))
	seen := false
	for !seen {
		ls, err := a.Lease(ctx, jobsdriver.LeaseParams{Max: 50, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			seen = seen || l.ID == older
		}
	}
	if !seen {
		t.Errorf("the job of two days ago (%s) was never leased", older)
	}
}

// TestLeaseSweepsSeldom leases from an empty queue, as an idle pool
// polls: the lease sweeps the whole table once, then looks at the
// floor's range alone until a floor recheck is due, so a job written
// below the floor meanwhile waits for that; then it is leased.
func TestLeaseSweepsSeldom(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	schema := testSchema(t, pool)
	ctx := context.Background()
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	lease := func() []jobsdriver.Lease {
		t.Helper()
		ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	// The first lease reads the floor, the second sweeps once.
	for range 3 {
		if ls := lease(); len(ls) != 0 {
			t.Fatalf("leased %d jobs from an empty queue", len(ls))
		}
	}
	old := insertJobOfDay(t, pool, schema, time.Now().AddDate(0, 0, -3))
	for range 5 {
		if ls := lease(); len(ls) != 0 {
			t.Fatalf("leased %s below the floor before a recheck was due", ls[0].ID)
		}
	}
	s.AgeLeaseFloor(time.Minute)
	if ls := lease(); len(ls) != 1 || ls[0].ID != old {
		t.Fatalf("leased %v once a recheck was due, want the job %s", ls, old)
	}
}
