package jobstest

// Rescuing the jobs of crashed workers, and its races with completion.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

func testCrashRescue(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 50)
	const leaseFor = 500 * time.Millisecond
	leasedAt := time.Now()
	crashed := mustLease(t, b, 100, leaseFor)
	if len(crashed) != 50 {
		t.Fatalf("leased %d, want 50", len(crashed))
	}
	// A rescue before the leases expire finds nothing. A loaded machine
	// may reach this line after they did: then the rescued ones count
	// toward the 50 below.
	n, err := b.q.RescueExpired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 && time.Since(leasedAt) < leaseFor {
		t.Fatalf("rescue before expiry: %d leases", n)
	}
	// Rescue until all 50 expired leases are back, whatever the
	// machine's load; never more than 50.
	waitFor(t, 10*time.Second, "50 expired leases rescued", func() bool {
		got, err := b.q.RescueExpired(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += got
		return n >= 50
	})
	if n != 50 {
		t.Fatalf("rescued %d, want 50", n)
	}
	again := mustLease(t, b, 100, time.Minute)
	if len(again) != 50 {
		t.Fatalf("leased %d after rescue, want 50", len(again))
	}
	for _, l := range crashed {
		r, _ := likely(ctx, l.Email)
		if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); !errors.Is(err, jobtype.ErrLeaseLost) {
			t.Fatalf("completion under an expired, rescued lease: %v, want ErrLeaseLost", err)
		}
	}
	for _, l := range again {
		if l.Errors != 1 {
			t.Fatalf("rescued job %s has Errors %d, want 1", l.ID, l.Errors)
		}
		r, _ := likely(ctx, l.Email)
		if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	checkCompleted(t, b, acct, ids)
}

func testCrashPool(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 100)
	ids, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(100, "crash")})
	if err != nil {
		t.Fatal(err)
	}
	// A worker leases half the jobs and vanishes.
	if ls := mustLease(t, b, 50, 50*time.Millisecond); len(ls) != 50 {
		t.Fatalf("leased %d, want 50", len(ls))
	}
	var c counter
	stop := runPool(t, b, validatorFunc(likely), &jobs.PoolConfig{
		Workers: 4, LeaseDuration: 200 * time.Millisecond, RescueInterval: 20 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, OnComplete: c.hook,
	})
	waitFor(t, 10*time.Second, "100 completions", func() bool { return c.total() >= 100 })
	stop()
	c.checkOnce(t, ids)
	checkCompleted(t, b, acct, ids)
	if n := balance(t, b, acct); n != 0 {
		t.Fatalf("balance %d, want 0", n)
	}
}

func testRescueRace(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 1)
	l := mustLease(t, b, 1, 300*time.Millisecond)[0]
	r, _ := likely(ctx, l.Email)
	r.Provider.Name = "Marker"
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // the old lease would have expired by now
	if n, err := b.q.RescueExpired(ctx); err != nil || n != 0 {
		t.Fatalf("rescue after completion: %d, %v; want 0", n, err)
	}
	j, err := b.q.Get(ctx, acct, ids[0])
	if err != nil || j.State != jobtype.StateCompleted || j.Result == nil || j.Result.Provider.Name != "Marker" {
		t.Fatalf("completed job after rescue: %+v, %v", j, err)
	}
	if ls := mustLease(t, b, 10, time.Second); len(ls) != 0 {
		t.Fatalf("a completed job was leased again: %+v", ls)
	}
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); !errors.Is(err, jobtype.ErrLeaseLost) {
		t.Fatalf("second completion: %v, want ErrLeaseLost", err)
	}
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token}); !errors.Is(err, jobtype.ErrLeaseLost) {
		t.Fatalf("retry of a completed job: %v, want ErrLeaseLost", err)
	}
}

func testRescueRaceConcurrent(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	mustEnqueue(t, b, acct, 200)
	ls := mustLease(t, b, 200, 20*time.Millisecond)
	time.Sleep(15 * time.Millisecond)
	completed := make([]bool, len(ls))
	var wg sync.WaitGroup
	stopRescue := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stopRescue:
				return
			default:
			}
			if _, err := b.q.RescueExpired(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var workers sync.WaitGroup
	for w := range 4 {
		workers.Go(func() {
			for i := w; i < len(ls); i += 4 {
				r, _ := likely(ctx, ls[i].Email)
				err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[i].ID, Token: ls[i].Token, Result: r})
				switch {
				case err == nil:
					completed[i] = true
				case !errors.Is(err, jobtype.ErrLeaseLost):
					t.Error(err)
				}
			}
		})
	}
	workers.Wait()
	close(stopRescue)
	wg.Wait()
	time.Sleep(25 * time.Millisecond)
	if _, err := b.q.RescueExpired(ctx); err != nil {
		t.Fatal(err)
	}
	for i, l := range ls {
		j, err := b.q.Get(ctx, acct, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if completed[i] != (j.State == jobtype.StateCompleted) || completed[i] != (j.Result != nil) {
			t.Fatalf("job %s: Complete succeeded %v, but state %s result %v", l.ID, completed[i], j.State, j.Result)
		}
	}
}
