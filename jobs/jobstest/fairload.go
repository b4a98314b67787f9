package jobstest

// The fair order under load: many accounts at once, and leasers that
// give jobs back every way at once.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// testManyAccountsTakeTurns: forty accounts, each with a batch, and one
// with a long list enqueued first: by the time half the jobs are leased,
// every account has had about half of its jobs, not the first comers
// all of theirs.
func testManyAccountsTakeTurns(t *testing.T, b *bundle) {
	const accounts, each = 40, 10
	big := account()
	mustEnqueue(t, b, big, 400)
	var all []string
	for range accounts {
		a := account()
		all = append(all, a)
		mustEnqueue(t, b, a, each)
	}
	got := leaseAll(t, b, 8)
	if want := 400 + accounts*each; len(got) != want {
		t.Fatalf("leased %d jobs, want %d", len(got), want)
	}
	// The accounts' 400 and the list's 400 alternate: within the first
	// 400 leased, each account has about half of its 10 jobs (5); first
	// come, first served, the last ones would have none.
	count := map[string]int{}
	for _, l := range got[:400] {
		count[l.AccountID]++
	}
	for i, a := range all {
		if count[a] < 3 {
			t.Errorf("the %dth account to enqueue had %d of its %d jobs in the first 400 leased; want about half", i+1, count[a], each)
		}
	}
	if count[big] > 260 {
		t.Errorf("the list had %d of the first 400 leases; want about half", count[big])
	}
}

// testLeasersGiveBackEveryWay: several leasers at once, over the jobs of
// many accounts, complete some jobs and give the others back at once,
// for later, after a failure, or for later after a failure, again and
// again: every job completes exactly once, none is lost, none is leased
// to two holders at once, whatever the driver's promotions of jobs come
// due do meanwhile.
func testLeasersGiveBackEveryWay(t *testing.T, b *bundle) {
	ctx := context.Background()
	const accounts, each, leasers = 12, 25, 6
	owner := map[string]string{}
	for range accounts {
		a := account()
		for _, id := range mustEnqueue(t, b, a, each) {
			owner[id] = a
		}
	}
	var mu sync.Mutex
	held := map[string]string{} // job → token of its lease now
	completed := map[string]int{}
	var failure error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(completed) == len(owner) || failure != nil
	}
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Minute)
	for w := range leasers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for !done() {
				if time.Now().After(deadline) {
					fail(errors.New("the jobs were not all completed within 2 minutes"))
					return
				}
				ls, err := b.Driver.Lease(ctx, jobsdriver.LeaseParams{Max: 1 + rng.IntN(6), Duration: time.Minute})
				if err != nil {
					fail(fmt.Errorf("lease: %w", err))
					return
				}
				if len(ls) == 0 {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				for _, l := range ls {
					mu.Lock()
					if tok, dup := held[l.ID]; dup {
						mu.Unlock()
						fail(fmt.Errorf("job %s leased again (token %s) while held under %s", l.ID, l.Token, tok))
						return
					}
					if completed[l.ID] > 0 {
						mu.Unlock()
						fail(fmt.Errorf("job %s leased after it completed", l.ID))
						return
					}
					if owner[l.ID] != l.AccountID {
						mu.Unlock()
						fail(fmt.Errorf("job %s leased as %q's, enqueued by %q", l.ID, l.AccountID, owner[l.ID]))
						return
					}
					held[l.ID] = l.Token
					mu.Unlock()
					if err := giveBack(ctx, b, rng, l, &mu, held, completed); err != nil {
						fail(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	for id, a := range owner {
		j, err := b.Driver.Get(ctx, a, id)
		if err != nil || j.State != jobtype.StateCompleted || completed[id] != 1 {
			t.Fatalf("job %s: %v %v, completed %d times", id, j.State, err, completed[id])
		}
	}
}

// giveBack completes l or gives it back, one way or another, at random:
// a job that failed three times is completed.
func giveBack(ctx context.Context, b *bundle, rng *rand.Rand, l jobsdriver.Lease, mu *sync.Mutex, held map[string]string, completed map[string]int) error {
	release := func() {
		mu.Lock()
		delete(held, l.ID)
		mu.Unlock()
	}
	p := jobsdriver.RetryParams{ID: l.ID, Token: l.Token}
	switch k := rng.IntN(5); {
	case l.Errors >= 3 || k == 0:
		release() // before the write: once written, another may lease it
		res, _ := likely(ctx, l.Email)
		if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: res}); err != nil {
			return fmt.Errorf("complete %s: %w", l.ID, err)
		}
		mu.Lock()
		completed[l.ID]++
		mu.Unlock()
		return nil
	case k == 1: // at once, keeping its place (a shutdown)
	case k == 2: // for later, without an error (the slow lane)
		p.RunAt = time.Now().Add(time.Duration(rng.IntN(40)) * time.Millisecond)
	case k == 3: // after a failure, at once
		p.Error = "failed"
	default: // after a failure, for later
		p.RunAt = time.Now().Add(time.Duration(rng.IntN(40)) * time.Millisecond)
		p.Error = "failed later"
	}
	release()
	if err := b.Driver.Retry(ctx, p); err != nil {
		return fmt.Errorf("retry %s: %w", l.ID, err)
	}
	return nil
}
