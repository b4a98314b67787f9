package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// TestListCommitBesideBatches: an account's list is committed while the
// same account submits batches. Both take the account's place in the fair
// order and charge its balance; whatever the order they do it in, both
// succeed: neither is ended as a deadlock's victim.
func TestListCommitBesideBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	const acct = "acct-list-and-batches"
	if _, err := s.Apply(ctx, creditsGrant(acct, 10_000_000)); err != nil {
		t.Fatal(err)
	}
	const rows = 20_000
	// A few lists, each with batches submitted all through its commit:
	// one round that ends in a deadlock is a failure.
	for round := range 3 {
		w, err := s.BeginList(ctx, jobtype.BeginListParams{AccountID: acct, Header: []string{"email"}, Rows: rows, Charge: true})
		if err != nil {
			t.Fatal(err)
		}
		page := make([]jobtype.ListRow, 0, 1000)
		for i := range rows {
			e := fmt.Sprintf("r%d-%d@example.org", round, i)
			page = append(page, jobtype.ListRow{N: i, Record: []string{e}, Email: e, Key: e})
			if len(page) == cap(page) {
				if err := w.Append(ctx, page); err != nil {
					t.Fatal(err)
				}
				page = page[:0]
			}
		}
		var stop atomic.Bool
		var batchErr error
		var batches atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				_, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: []string{fmt.Sprintf("b%d-%d@example.org", round, i)}})
				if err != nil {
					batchErr = err
					return
				}
				batches.Add(1)
			}
		})
		// The batches are under way before the commit starts.
		for deadline := time.Now().Add(time.Minute); batches.Load() < 3; {
			if time.Now().After(deadline) || batchErr != nil {
				t.Fatalf("the batches did not start: %v", batchErr)
			}
			time.Sleep(time.Millisecond)
		}
		_, listErr := w.Commit(ctx)
		stop.Store(true)
		wg.Wait()
		if listErr != nil || batchErr != nil {
			t.Fatalf("round %d, list of %d rows committed beside %d batches of the same account: list: %v; batch: %v",
				round, rows, batches.Load(), listErr, batchErr)
		}
	}
}

// TestLeaseBesideListCommit: while another transaction holds an account's
// place in the fair order (its row of job_turns), leases go on handing out
// the other accounts' jobs at once, even when a retry of that account
// comes due meanwhile: the promotion passes the account over rather than
// wait.
func TestLeaseBesideListCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	schema := testSchema(t, pool)
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	const lister, other = "acct-lister", "acct-other"
	if _, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: lister, Emails: []string{"retried@example.org"}}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v %v", ls, err)
	}
	// The lister's job failed and is retried in a moment.
	due := time.Now().Add(100 * time.Millisecond)
	if err := s.Retry(ctx, jobsdriver.RetryParams{ID: ls[0].ID, Token: ls[0].Token, RunAt: due, Error: "timeout"}); err != nil {
		t.Fatal(err)
	}
	// A transaction takes the lister's place in line and holds it until
	// it ends.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `INSERT INTO "`+schema+`".job_turns AS jt (account, last_turn) VALUES ($1, 1000000)
		ON CONFLICT (account) DO UPDATE SET last_turn = jt.last_turn + 1000000`, lister); err != nil {
		t.Fatal(err)
	}
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: other, Emails: []string{"a@example.org", "b@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(due))
	// A lease takes milliseconds; 20 s is past any busy machine.
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	got, err := s.Lease(lctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
	if err != nil {
		t.Fatalf("a lease while another account's list commits: %v after %v; want the other account's %d jobs at once", err, time.Since(start).Round(time.Millisecond), len(ids))
	}
	n := 0
	for _, l := range got {
		if l.AccountID == other {
			n++
		}
	}
	if n != len(ids) {
		t.Fatalf("a lease while another account's list commits gave %d of the other account's %d jobs", n, len(ids))
	}
}
