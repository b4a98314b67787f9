package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/backend"
)

// testAccountSlots: an account's slots are taken up to the limit, a
// holder's again renews it, a release or an expiry frees one, accounts
// are apart, and of concurrent acquisitions exactly the limit succeed.
func testAccountSlots(t *testing.T, b *backend.Backend) {
	if b.AccountSlots == nil {
		t.Skip("backend keeps no account slots")
	}
	ctx := context.Background()
	sl := b.AccountSlots
	acct, other := uuid.NewString(), uuid.NewString()
	long := time.Hour
	for _, tc := range []struct {
		account, holder string
		want            bool
	}{
		{acct, "j1", true},
		{acct, "j2", true},
		{acct, "j3", false}, // the limit is 2
		{acct, "j1", true},  // renewed
		{other, "j3", true}, // another account's slots are its own
	} {
		if ok, err := sl.AcquireSlot(ctx, tc.account, tc.holder, 2, long); err != nil || ok != tc.want {
			t.Errorf("AcquireSlot(%s) = %v, %v; want %v", tc.holder, ok, err, tc.want)
		}
	}
	if err := sl.ReleaseSlot(ctx, acct, "j2"); err != nil {
		t.Fatal(err)
	}
	if err := sl.ReleaseSlot(ctx, acct, "never held"); err != nil {
		t.Errorf("ReleaseSlot of a holder without a slot: %v", err)
	}
	if ok, err := sl.AcquireSlot(ctx, acct, "j3", 2, long); err != nil || !ok {
		t.Errorf("AcquireSlot after a release = %v, %v", ok, err)
	}

	// An expired slot frees itself.
	exp := uuid.NewString()
	if ok, err := sl.AcquireSlot(ctx, exp, "short", 1, 200*time.Millisecond); err != nil || !ok {
		t.Fatalf("AcquireSlot = %v, %v", ok, err)
	}
	if ok, err := sl.AcquireSlot(ctx, exp, "next", 1, long); err != nil || ok {
		t.Errorf("AcquireSlot while the slot is live = %v, %v", ok, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ok, err := sl.AcquireSlot(ctx, exp, "next", 1, long)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an expired slot is never freed")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Concurrent acquisitions: exactly the limit.
	busy := uuid.NewString()
	var got atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			ok, err := sl.AcquireSlot(ctx, busy, fmt.Sprint("h", i), 3, long)
			if err != nil {
				t.Error(err)
			}
			if ok {
				got.Add(1)
			}
		})
	}
	wg.Wait()
	if got.Load() != 3 {
		t.Errorf("of 16 concurrent acquisitions with a limit of 3, %d succeeded", got.Load())
	}
}

// testPoolAccountBound: two pools over the backend's queue and account
// slots validate at most the bound of an account's jobs at once (the
// fleet-wide bound of a plan's concurrent jobs), and all of them.
func testPoolAccountBound(t *testing.T, b *backend.Backend) {
	if b.AccountSlots == nil {
		t.Skip("backend keeps no account slots")
	}
	ctx := context.Background()
	q, err := jobs.NewQueue(b.Jobs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	account := uuid.NewString()
	var mu sync.Mutex
	now, most := 0, 0
	v := boundValidator(func(context.Context, string) (emailcheck.Result, error) {
		mu.Lock()
		now++
		most = max(most, now)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		now--
		mu.Unlock()
		return emailcheck.Result{}, nil
	})
	for range 2 {
		p, err := jobs.NewPool(q, v, &jobs.PoolConfig{
			Workers: 6, PollInterval: 10 * time.Millisecond, AccountSlots: b.AccountSlots,
			AccountConcurrency: func(context.Context, string) int { return 2 },
		})
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(pctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	var emails []string
	for i := range 10 {
		emails = append(emails, fmt.Sprintf("bound-%d@example.org", i))
	}
	ids, err := q.Enqueue(ctx, account, emails)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			j, err := q.Get(ctx, account, id)
			if err == nil && j.State == jobs.StateCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: %+v, %v", id, j, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 2 || most < 1 {
		t.Errorf("%d jobs of the account validated at once, bound 2", most)
	}
}

type boundValidator func(context.Context, string) (emailcheck.Result, error)

func (f boundValidator) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	return f(ctx, email)
}
