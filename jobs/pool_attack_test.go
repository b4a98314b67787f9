package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
)

// While completion writes stall, the pool's held leases stay bounded,
// and the jobs waiting for their write are not taken for slow domains:
// no job is handed back for later because its account's or its domain's
// earlier jobs wait for a write rather than for the DNS.
func TestPoolStalledWritesAreNotSlowDomains(t *testing.T) {
	t.Parallel()
	d := &gatedWrites{Driver: memstore.New().Backend().Jobs, release: make(chan struct{})}
	q, err := jobs.NewQueue(d, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for a := range 4 {
		emails := make([]string, 300)
		for i := range emails {
			emails[i] = fmt.Sprintf("user%d@d%d.example.org", i, i%3)
		}
		if _, err := q.Enqueue(context.Background(), fmt.Sprintf("acct%d", a), emails); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 2 // a capacity of 8 leases
	instant := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) { return likelyResult(email), nil })
	p, err := jobs.NewPool(q, instant, &jobs.PoolConfig{Workers: workers, PollInterval: 5 * time.Millisecond,
		CleanupInterval: -1, SlowAfter: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	// The writes stall for a few seconds (less than the group's own
	// bound on its write).
	time.Sleep(3 * time.Second)
	close(d.release)
	d.mu.Lock()
	held := d.maxHeld
	d.mu.Unlock()
	t.Logf("leased %d, most held at once %d, deferred %d, busy at the end %d", d.leased.Load(), held, d.deferred.Load(), p.Busy())
	if n := d.deferred.Load(); n > 0 {
		t.Errorf("%d jobs handed back for later while only the completions' writes stalled", n)
	}
	// Capacity 8, completions queued and in a group 4 times that each.
	if bound := int64(8 + 2*4*8); held > bound {
		t.Errorf("%d leases held at once while writes stalled; want at most %d", held, bound)
	}
}

// Two pools on one store, sharing its account slots, while completion
// writes stall: a bounded account still has at most its bound of jobs
// validated at once, and every job is completed exactly once when the
// writes go through.
func TestPoolAccountBoundWhileWritesStall(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	d := &gatedWrites{Driver: s.Backend().Jobs, release: make(chan struct{})}
	q, err := jobs.NewQueue(d, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := newInFlight()
	bound := func(_ context.Context, account string) int {
		if account == "capped" {
			return 2
		}
		return 0
	}
	var mu sync.Mutex
	completions := map[string]int{}
	for range 2 {
		p, err := jobs.NewPool(q, validatorFunc(f.validate), &jobs.PoolConfig{
			Workers: 4, PollInterval: 5 * time.Millisecond, AccountConcurrency: bound, AccountSlots: s.Backend().AccountSlots,
			SlowAfter: time.Minute, CleanupInterval: -1,
			OnComplete: func(_ context.Context, j jobs.Job) {
				mu.Lock()
				completions[j.ID]++
				mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		runPool(t, p)
	}
	var all []string
	for _, account := range []string{"capped", "free"} {
		var emails []string
		for i := range 40 {
			emails = append(emails, fmt.Sprintf("%s-%d@example.org", account, i))
		}
		ids, err := q.Enqueue(ctx, account, emails)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ids...)
	}
	time.Sleep(2 * time.Second)
	close(d.release)
	waitFor(t, 2*time.Minute, "every job completed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(completions) == len(all)
	})
	mu.Lock()
	defer mu.Unlock()
	for id, n := range completions {
		if n != 1 {
			t.Errorf("job %s completed %d times", id, n)
		}
	}
	if n := f.most("capped"); n > 2 {
		t.Errorf("the bounded account had %d jobs validated at once, bound 2", n)
	}
}
