package jobs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store/memstore"
)

// countingSlots counts the slot acquisitions asked of the store.
type countingSlots struct {
	jobsdriver.AccountSlots
	acquires atomic.Int64
}

func (c *countingSlots) AcquireSlot(ctx context.Context, account, holder string, limit int, ttl time.Duration) (bool, error) {
	c.acquires.Add(1)
	return c.AccountSlots.AcquireSlot(ctx, account, holder, limit, ttl)
}

// TestPoolAccountBoundBacklogCost: a bounded account's large backlog
// is not leased, asked a slot and deferred again every second or two:
// the store round trips its jobs take stay within a small multiple of
// the jobs validated, as the slow lane's deferrals back off.
func TestPoolAccountBoundBacklogCost(t *testing.T) {
	s := memstore.New()
	q, err := jobs.NewQueue(s.Backend().Jobs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var validated atomic.Int64
	slow := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		time.Sleep(100 * time.Millisecond)
		validated.Add(1)
		return emailcheck.Result{Email: email}, nil
	})
	bound := func(_ context.Context, account string) int {
		if account == "capped" {
			return 1
		}
		return 0
	}
	slots := &countingSlots{AccountSlots: s.Backend().AccountSlots}
	var emails []string
	for i := range 500 {
		emails = append(emails, fmt.Sprintf("capped-%d@example.org", i))
	}
	if _, err := q.Enqueue(ctx, "capped", emails); err != nil {
		t.Fatal(err)
	}
	p, err := jobs.NewPool(q, slow, &jobs.PoolConfig{Workers: 8, PollInterval: 5 * time.Millisecond, AccountConcurrency: bound, AccountSlots: slots})
	if err != nil {
		t.Fatal(err)
	}
	stop := runPool(t, p)
	// The first pass over the backlog may ask each job's slot once;
	// after it, each validation should cost about one.
	time.Sleep(3 * time.Second)
	n0, asked0 := validated.Load(), slots.acquires.Load()
	time.Sleep(5 * time.Second)
	stop()
	n, asked := validated.Load()-n0, slots.acquires.Load()-asked0
	t.Logf("in 5 s: %d jobs validated, %d slots asked", n, asked)
	if asked > 4*(n+8) {
		t.Errorf("%d slot acquisitions (each a lease and a deferral written too) for %d jobs validated: the backlog is leased and deferred in a loop", asked, n)
	}
}
