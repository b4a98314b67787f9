package jobstest

// Leasing: exclusivity, heartbeats, retries and the attempt limit.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

func testLeaseExclusive(t *testing.T, b *bundle) {
	acct := account()
	ids := mustEnqueue(t, b, acct, 10)
	first := mustLease(t, b, 4, time.Minute)
	if len(first) != 4 {
		t.Fatalf("leased %d, want 4", len(first))
	}
	for i, l := range first {
		if l.ID != ids[i] || l.Token == "" || l.AccountID != acct || l.Email == "" || !l.ExpiresAt.After(time.Now()) {
			t.Fatalf("lease %d: %+v; want job %s, oldest first", i, l, ids[i])
		}
	}
	rest := mustLease(t, b, 100, time.Minute)
	if len(rest) != 6 {
		t.Fatalf("second lease got %d, want 6", len(rest))
	}
	seen := map[string]bool{}
	for _, l := range append(first, rest...) {
		if seen[l.ID] || seen["token:"+l.Token] {
			t.Fatalf("job or token leased twice: %+v", l)
		}
		seen[l.ID], seen["token:"+l.Token] = true, true
	}
	if ls := mustLease(t, b, 100, time.Minute); len(ls) != 0 {
		t.Fatalf("leased %d jobs already held", len(ls))
	}
	if _, err := b.Driver.Lease(context.Background(), jobsdriver.LeaseParams{Max: 0, Duration: time.Second}); err == nil {
		t.Fatal("Lease with Max 0 succeeded")
	}
}

func testHeartbeat(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	mustEnqueue(t, b, acct, 1)
	// Margins are wide enough for a loaded machine: each renewal comes
	// well before the lease would end, and its expiry is checked against
	// the time before it was asked for, so a slow call cannot fail it.
	l := mustLease(t, b, 1, 2*time.Second)[0]
	for range 3 {
		time.Sleep(10 * time.Millisecond)
		before := time.Now()
		exp, err := b.Driver.Heartbeat(ctx, jobsdriver.HeartbeatParams{ID: l.ID, Token: l.Token, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if !exp.After(before.Add(50 * time.Second)) {
			t.Fatalf("heartbeat expiry %v is not about a minute after %v", exp, before)
		}
		if n, err := b.q.RescueExpired(ctx); err != nil || n != 0 {
			t.Fatalf("rescued a renewed lease: %d, %v", n, err)
		}
	}
	bad := l
	bad.Token = "not-the-token"
	if _, err := b.Driver.Heartbeat(ctx, jobsdriver.HeartbeatParams{ID: bad.ID, Token: bad.Token, Duration: time.Second}); !errors.Is(err, jobtype.ErrLeaseLost) {
		t.Fatalf("heartbeat with a wrong token: %v, want ErrLeaseLost", err)
	}
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: bad.Token}); !errors.Is(err, jobtype.ErrLeaseLost) {
		t.Fatalf("complete with a wrong token: %v, want ErrLeaseLost", err)
	}
	unknown := l
	unknown.ID = "999999999999"
	if _, err := b.Driver.Heartbeat(ctx, jobsdriver.HeartbeatParams{ID: unknown.ID, Token: unknown.Token, Duration: time.Second}); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("heartbeat of an unknown job: %v, want ErrNotFound", err)
	}
	r, _ := likely(ctx, l.Email)
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Driver.Heartbeat(ctx, jobsdriver.HeartbeatParams{ID: l.ID, Token: l.Token, Duration: time.Second}); !errors.Is(err, jobtype.ErrLeaseLost) {
		t.Fatalf("heartbeat of a completed job: %v, want ErrLeaseLost", err)
	}
}

func testRetry(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 1)
	l := mustLease(t, b, 1, time.Minute)[0]
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, RunAt: time.Now().Add(time.Second), Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	j, err := b.q.Get(ctx, acct, ids[0])
	if err != nil || j.State != jobtype.StateActive || j.Errors != 1 || j.LastError != "boom" {
		t.Fatalf("job after retry: %+v, %v", j, err)
	}
	if ls := mustLease(t, b, 1, time.Minute); len(ls) != 0 {
		t.Fatal("job leased before its run-at")
	}
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token}); !errors.Is(err, jobtype.ErrLeaseLost) {
		t.Fatalf("second retry under the same lease: %v, want ErrLeaseLost", err)
	}
	var l2 jobsdriver.Lease
	waitFor(t, 5*time.Second, "the retried job", func() bool {
		ls := mustLease(t, b, 1, time.Minute)
		if len(ls) == 1 {
			l2 = ls[0]
		}
		return len(ls) == 1
	})
	if l2.ID != l.ID || l2.Errors != 1 || l2.Token == l.Token {
		t.Fatalf("re-leased %+v", l2)
	}
	// Handing a job back without an error does not count an attempt and
	// makes it available at once.
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l2.ID, Token: l2.Token}); err != nil {
		t.Fatal(err)
	}
	ls := mustLease(t, b, 1, time.Minute)
	if len(ls) != 1 || ls[0].Errors != 1 {
		t.Fatalf("handed-back job: %+v", ls)
	}
}

// testRetryUnjudged: a job's count of unjudged attempts is what the
// latest failed attempt's retry gave; a hand-back without an error keeps
// it, a failure of another kind or a rescued lease clears it.
func testRetryUnjudged(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	mustEnqueue(t, b, acct, 1)
	l := mustLease(t, b, 1, time.Minute)[0]
	if l.Unjudged != 0 {
		t.Fatalf("a new job has Unjudged %d", l.Unjudged)
	}
	for i, step := range []struct {
		retry jobsdriver.RetryParams
		want  int
	}{
		{jobsdriver.RetryParams{Error: "no verdict", Unjudged: 1}, 1},
		{jobsdriver.RetryParams{Error: "no verdict again", Unjudged: 2}, 2},
		{jobsdriver.RetryParams{}, 2}, // handed back: kept
		{jobsdriver.RetryParams{Error: "boom"}, 0},
		{jobsdriver.RetryParams{Error: "no verdict", Unjudged: 1}, 1},
	} {
		p := step.retry
		p.ID, p.Token = l.ID, l.Token
		if err := b.Driver.Retry(ctx, p); err != nil {
			t.Fatal(err)
		}
		ls := mustLease(t, b, 1, time.Minute)
		if len(ls) != 1 || ls[0].Unjudged != step.want || (p.Error != "" && ls[0].LastError != p.Error) {
			t.Fatalf("step %d, after %+v: leased %+v, want Unjudged %d", i, step.retry, ls, step.want)
		}
		l = ls[0]
	}
	// A rescued lease is a failure of another kind.
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token}); err != nil {
		t.Fatal(err)
	}
	l = mustLease(t, b, 1, time.Millisecond)[0]
	waitFor(t, 10*time.Second, "the expired lease rescued", func() bool {
		n, err := b.Driver.RescueExpired(ctx, jobsdriver.RescueParams{})
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	ls := mustLease(t, b, 1, time.Minute)
	if len(ls) != 1 || ls[0].Unjudged != 0 || ls[0].LastError == "" {
		t.Fatalf("after a rescue: %+v, want Unjudged 0", ls)
	}
}

func testExhausted(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 2)
	ids, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: []string{"a@x.example", "b@x.example"}})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		calls.Add(1)
		return emailcheck.Result{}, errors.New("resolver unavailable")
	})
	var c counter
	stop := runPool(t, b, v, &jobs.PoolConfig{
		Workers: 2, MaxAttempts: 3, Backoff: func(int) time.Duration { return time.Millisecond },
		PollInterval: 5 * time.Millisecond, OnComplete: c.hook,
	})
	waitFor(t, 10*time.Second, "2 completions", func() bool { return c.total() >= 2 })
	stop()
	c.checkOnce(t, ids)
	if calls.Load() != 6 {
		t.Errorf("validator called %d times, want 6 (3 attempts per job)", calls.Load())
	}
	for _, id := range ids {
		j, err := b.q.Get(ctx, acct, id)
		if err != nil || j.State != jobtype.StateCompleted || j.Result == nil || j.Result.Confidence.Status != emailcheck.StatusUnknown || j.Result.Email != j.Email {
			t.Fatalf("exhausted job: %+v, %v; want completed UNKNOWN", j, err)
		}
	}
	if n := balance(t, b, acct); n != 2 {
		t.Fatalf("balance %d, want 2 (both refunded)", n)
	}
}

// testQueueStats: the queue's depth by state and its oldest active job.
func testQueueStats(t *testing.T, b *bundle) {
	sd, ok := b.Driver.(jobsdriver.StatsDriver)
	if !ok {
		t.Skip("driver does not implement jobsdriver.StatsDriver")
	}
	ctx := context.Background()
	stats := func() jobtype.QueueStats {
		t.Helper()
		st, err := sd.QueueStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := stats(); st != (jobtype.QueueStats{}) {
		t.Fatalf("empty queue: %+v", st)
	}
	acct := account()
	ids := mustEnqueue(t, b, acct, 3)
	first, err := b.q.Get(ctx, acct, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	ls := mustLease(t, b, 2, time.Minute)
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: ls[1].ID, Token: ls[1].Token, RunAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	st := stats()
	if st.Available != 1 || st.Delayed != 1 || st.Running != 1 || !st.OldestActive.Truncate(time.Millisecond).Equal(first.CreatedAt.Truncate(time.Millisecond)) {
		t.Fatalf("stats %+v, want 1 available, 1 delayed, 1 running, oldest created %v", st, first.CreatedAt)
	}
	r, _ := likely(ctx, ls[0].Email)
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: r}); err != nil {
		t.Fatal(err)
	}
	if st := stats(); st.Running != 0 || st.Available != 1 || st.Delayed != 1 || st.OldestActive.IsZero() {
		t.Fatalf("after a completion: %+v", st)
	}
}
