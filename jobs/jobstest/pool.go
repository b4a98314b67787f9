package jobstest

// The worker pool over the driver: draining, wake-ups, retention and cancellation.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// runPool runs a pool over b until stop is called; stop waits for Run.
func runPool(t *testing.T, b *bundle, v jobs.Validator, cfg *jobs.PoolConfig) (stop func()) {
	t.Helper()
	p, err := jobs.NewPool(b.q, v, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Run did not return within 10s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// counter counts completions per job id.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) hook(_ context.Context, j jobtype.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[j.ID]++
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := 0
	for _, v := range c.n {
		s += v
	}
	return s
}

func (c *counter) checkOnce(t *testing.T, ids []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.n[id] != 1 {
			t.Errorf("job %s completed %d times", id, c.n[id])
		}
	}
	if len(c.n) != len(ids) {
		t.Errorf("%d jobs completed, want %d", len(c.n), len(ids))
	}
}

func testPoolDrain(t *testing.T, b *bundle) {
	acct := account()
	ids := mustEnqueue(t, b, acct, 200)
	var c counter
	started := make(chan struct{}, 1000)
	release := make(chan struct{})
	v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		started <- struct{}{}
		<-release
		return likely(ctx, email)
	})
	stop := runPool(t, b, v, &jobs.PoolConfig{Workers: 4, LeaseDuration: 5 * time.Second, PollInterval: 10 * time.Millisecond, OnComplete: c.hook})
	for range 4 {
		<-started // four validations are in flight
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	time.Sleep(30 * time.Millisecond)
	select {
	case <-stopped:
		t.Fatal("Run returned before the validations in flight finished")
	default:
	}
	close(release)
	<-stopped
	if got := c.total(); got != 4 {
		t.Fatalf("%d jobs completed during the drain, want the 4 in flight", got)
	}
	// Every other job is available again at once: nothing stays leased.
	ls := mustLease(t, b, 1000, time.Minute)
	if len(ls) != len(ids)-4 {
		t.Fatalf("%d jobs available after the drain, want %d", len(ls), len(ids)-4)
	}
	for _, l := range ls {
		if l.Errors != 0 {
			t.Fatalf("a handed-back job counted a failure: %+v", l)
		}
	}
}

func testNotifier(t *testing.T, b *bundle) {
	if _, ok := b.Driver.(jobsdriver.Notifier); !ok {
		t.Skip("driver does not implement jobsdriver.Notifier")
	}
	acct := account()
	var c counter
	// The pool works over a driver that reports its subscription, so that
	// the job is enqueued only once the pool listens: with an hour's poll
	// interval, only the notification can wake it.
	spy := &subscribeSpy{Driver: b.Driver, subscribed: make(chan struct{})}
	q, err := jobs.NewQueue(spy, b.ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, &bundle{Backend: b.Backend, q: q, ledger: b.ledger}, validatorFunc(likely),
		&jobs.PoolConfig{Workers: 2, PollInterval: time.Hour, OnComplete: c.hook})
	select {
	case <-spy.subscribed:
	case <-time.After(5 * time.Second):
		t.Fatal("the pool did not subscribe within 5s")
	}
	start := time.Now()
	ids := mustEnqueue(t, b, acct, 1)
	waitFor(t, 2*time.Second, "a notified completion", func() bool { return c.total() == 1 })
	if d := time.Since(start); d > time.Second {
		t.Errorf("the job completed %v after enqueue", d)
	}
	c.checkOnce(t, ids)
}

// subscribeSpy is a driver whose Subscribe closes subscribed once the
// underlying driver has subscribed.
type subscribeSpy struct {
	jobsdriver.Driver
	subscribed chan struct{}
	once       sync.Once
}

func (s *subscribeSpy) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ch, err := s.Driver.(jobsdriver.Notifier).Subscribe(ctx)
	if err == nil {
		s.once.Do(func() { close(s.subscribed) })
	}
	return ch, err
}

func testCleanup(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 3)
	ls := mustLease(t, b, 2, time.Minute)
	r, _ := likely(ctx, ls[0].Email)
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: r}); err != nil {
		t.Fatal(err)
	}
	n, err := b.Driver.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now().Add(-time.Minute)})
	if err != nil || n != 0 {
		t.Fatalf("cleanup of recent jobs: %d, %v; want 0", n, err)
	}
	if n, err := b.q.Cleanup(ctx); err != nil || n != 0 {
		t.Fatalf("cleanup with the default retention: %d, %v; want 0", n, err)
	}
	n, err = b.Driver.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now().Add(time.Minute + cleanupGranularity(b.Driver))})
	if err != nil || n != 1 {
		t.Fatalf("cleanup: %d, %v; want 1", n, err)
	}
	if _, err := b.q.Get(ctx, acct, ids[0]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("removed job: %v, want ErrNotFound", err)
	}
	for _, id := range ids[1:] {
		if j, err := b.q.Get(ctx, acct, id); err != nil || j.State != jobtype.StateActive {
			t.Fatalf("active job %s after cleanup: %+v, %v", id, j, err)
		}
	}
}

func testCanceled(t *testing.T, b *bundle) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	acct := account()
	if _, err := b.q.Enqueue(ctx, acct, []string{"a@b.example"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enqueue with a canceled context: %v", err)
	}
	if ls := mustLease(t, b, 10, time.Second); len(ls) != 0 {
		t.Fatal("a canceled Enqueue created a job")
	}
	if _, err := b.Driver.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Second}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lease with a canceled context: %v", err)
	}
}

// cleanupGranularity is how much later than a job's completion a driver's
// Cleanup must be asked to remove it: its granularity, if it has one.
func cleanupGranularity(d jobsdriver.Driver) time.Duration {
	if g, ok := d.(jobsdriver.GranularCleanup); ok {
		return g.CleanupGranularity()
	}
	return 0
}
