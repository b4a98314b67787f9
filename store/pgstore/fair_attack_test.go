package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// TestPromoteAfterClockStep: the host's wall clock steps back (an NTP
// correction) after a lease; a job handed back for a moment still comes
// back within a moment, not when the clock has caught up again.
func TestPromoteAfterClockStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v %v", ls, err)
	}
	if err := s.Retry(ctx, jobsdriver.RetryParams{ID: ls[0].ID, Token: ls[0].Token, RunAt: time.Now().Add(200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	s.StepClockBack(time.Hour)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 1 && ls[0].ID == ids[0] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a job handed back for 200 ms was not leased again within 30 s after the wall clock stepped back an hour")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTwoStoresPromoteAtOnce: two processes share a queue whose jobs,
// of many accounts, all come due at once and are given back again and
// again, for later, as leases go on in both: the promotions of both
// never deadlock, and every job completes exactly once.
func TestTwoStoresPromoteAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	schema := testSchema(t, pool)
	var stores [2]*pgstore.Store
	for i := range stores {
		s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	const accounts, each = 20, 60 // more than one promotion takes (1,000)
	owner := map[string]string{}
	for a := range accounts {
		acct := fmt.Sprintf("acct-%02d", a)
		em := make([]string, each)
		for i := range em {
			em[i] = fmt.Sprintf("u%d@a%d.example.org", i, a)
		}
		ids, err := stores[a%2].Enqueue(ctx, jobtype.EnqueueParams{AccountID: acct, Emails: em})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			owner[id] = acct
		}
	}
	// Every job is handed back for the same moment: they come due in
	// bulk, more than one promotion takes.
	var held []jobsdriver.Lease
	for len(held) < len(owner) {
		ls, err := stores[0].Lease(ctx, jobsdriver.LeaseParams{Max: 500, Duration: time.Hour})
		if err != nil || len(ls) == 0 {
			t.Fatalf("leased %d of %d jobs: %v", len(held), len(owner), err)
		}
		held = append(held, ls...)
	}
	due := time.Now().Add(time.Hour) // moved to now below, all at once
	for _, l := range held {
		if err := stores[0].Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, RunAt: due}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE "`+schema+`".jobs SET run_at = now() WHERE delayed`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	completed := map[string]int{}
	var firstErr error
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Minute)
	for w := range 4 {
		s := stores[w%2]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			for {
				mu.Lock()
				stop := len(completed) == len(owner) || firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
				if time.Now().After(deadline) {
					mu.Lock()
					firstErr = fmt.Errorf("%d of %d jobs completed within 3 minutes", len(completed), len(owner))
					mu.Unlock()
					return
				}
				ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 16, Duration: time.Minute})
				for _, l := range ls {
					switch k := rng.IntN(4); {
					case l.Errors >= 3 || k == 0:
						err = s.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: emailcheck.Result{Email: l.Email}})
						if err == nil {
							mu.Lock()
							completed[l.ID]++
							mu.Unlock()
						}
					case k == 1:
						err = s.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, RunAt: time.Now().Add(time.Duration(rng.IntN(30)) * time.Millisecond)})
					default:
						err = s.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, RunAt: time.Now().Add(time.Duration(rng.IntN(30)) * time.Millisecond), Error: "timeout"})
					}
					if err != nil {
						break
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				if len(ls) == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	for id, n := range completed {
		if n != 1 {
			t.Fatalf("job %s completed %d times", id, n)
		}
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".jobs WHERE state <> 'completed'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d jobs not completed (%v)", left, err)
	}
}
