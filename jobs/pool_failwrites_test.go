package jobs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
)

// While every completion write fails, the pool does not go on leasing
// and validating the whole backlog only to throw the results away (each
// job then waits for its lease to expire): it leases a bounded number
// of jobs, as it pauses during a DNS outage.
func TestPoolHoldsBackWhileWritesFail(t *testing.T) {
	t.Parallel()
	d := &gatedWrites{Driver: memstore.New().Backend().Jobs}
	d.failing.Store(true)
	q, err := jobs.NewQueue(d, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	emails := make([]string, 5000)
	for i := range emails {
		emails[i] = fmt.Sprintf("u%d@example.org", i)
	}
	if _, err := q.Enqueue(context.Background(), "a", emails); err != nil {
		t.Fatal(err)
	}
	var validated atomic.Int64
	v := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		validated.Add(1)
		return likelyResult(email), nil
	})
	p, err := jobs.NewPool(q, v, &jobs.PoolConfig{Workers: 2, PollInterval: 5 * time.Millisecond, CleanupInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	time.Sleep(2 * time.Second)
	t.Logf("in 2 s of failing writes: leased %d, validated %d, completed %d", d.leased.Load(), validated.Load(), p.Completed())
	// A capacity of 8 leases: twenty times that is ample for the
	// failures to be noticed.
	if n := d.leased.Load(); n > 20*8 {
		t.Errorf("%d of %d jobs leased and validated while no completion could be written", n, len(emails))
	}
	// Once writes succeed again, the backlog drains: the jobs leased
	// meanwhile come back when their leases expire.
	d.failing.Store(false)
	want := int64(len(emails)) - d.leased.Load() // those leased before wait for their leases to expire
	deadline := time.Now().Add(2 * time.Minute)
	for p.Completed() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := p.Completed(); got < want {
		t.Errorf("after writes recovered, %d jobs completed, want at least %d", got, want)
	}
}
