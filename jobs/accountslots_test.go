package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
)

// inFlight counts validations running at once per account (the
// address's local part before its dash) and keeps the most seen.
type inFlight struct {
	mu       sync.Mutex
	now, top map[string]int
	more     *sync.Cond
}

func newInFlight() *inFlight {
	f := &inFlight{now: map[string]int{}, top: map[string]int{}}
	f.more = sync.NewCond(&f.mu)
	return f
}

func (f *inFlight) validate(ctx context.Context, email string) (emailcheck.Result, error) {
	account, _, _ := strings.Cut(email, "-")
	f.mu.Lock()
	f.now[account]++
	f.top[account] = max(f.top[account], f.now[account])
	f.more.Broadcast()
	if account == "free" {
		// The unbounded account's jobs wait for three of theirs at once,
		// so that its concurrency shows (or the test's deadline).
		deadline := time.Now().Add(10 * time.Second)
		for f.now[account] < 3 && time.Now().Before(deadline) {
			t := time.AfterFunc(50*time.Millisecond, func() { f.mu.Lock(); f.more.Broadcast(); f.mu.Unlock() })
			f.more.Wait()
			t.Stop()
		}
	}
	f.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	f.mu.Lock()
	f.now[account]--
	f.mu.Unlock()
	return emailcheck.Result{Email: email}, nil
}

func (f *inFlight) most(account string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.top[account]
}

// TestPoolAccountConcurrency: two pools sharing one store's account
// slots validate at most the bound of a bounded account's jobs at once,
// all of them in the end, while another account's jobs run many at
// once.
func TestPoolAccountConcurrency(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	q, err := jobs.NewQueue(s.Backend().Jobs, nil, nil)
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
	slots := s.Backend().AccountSlots
	for range 2 {
		p, err := jobs.NewPool(q, validatorFunc(f.validate), &jobs.PoolConfig{
			Workers: 8, PollInterval: 5 * time.Millisecond, AccountConcurrency: bound, AccountSlots: slots,
		})
		if err != nil {
			t.Fatal(err)
		}
		runPool(t, p)
	}
	ids := map[string][]string{}
	for _, account := range []string{"capped", "free"} {
		var emails []string
		for i := range 12 {
			emails = append(emails, fmt.Sprintf("%s-%d@example.org", account, i))
		}
		if ids[account], err = q.Enqueue(ctx, account, emails); err != nil {
			t.Fatal(err)
		}
	}
	for account, list := range ids {
		for _, id := range list {
			deadline := time.Now().Add(2 * time.Minute)
			for {
				j, err := q.Get(ctx, account, id)
				if err == nil && j.State == jobs.StateCompleted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job %s of %s: %+v, %v", id, account, j, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	if n := f.most("capped"); n > 2 || n < 1 {
		t.Errorf("the bounded account had %d jobs validated at once, bound 2", n)
	}
	if n := f.most("free"); n < 3 {
		t.Errorf("the unbounded account had at most %d jobs at once", n)
	}
	// The slots are all free again.
	for i := range 2 {
		if ok, err := slots.AcquireSlot(ctx, "capped", fmt.Sprint("after-", i), 2, time.Minute); err != nil || !ok {
			t.Errorf("slot %d after the jobs: %v, %v", i, ok, err)
		}
	}
}
