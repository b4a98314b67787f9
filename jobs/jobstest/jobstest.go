// Package jobstest is the conformance suite for [jobs.Driver] backends. A
// backend's test calls [Run] with a constructor of fresh backends. A backend
// that keeps its data outside the process also runs [RunCrash], which kills
// a worker process mid-batch and checks that a new one finishes every job
// exactly once with exact credit accounting; [Bench] measures enqueue and
// drain throughput the same way for every backend.
package jobstest

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook/jobevents"
)

// backend is what the suite needs of a [store.Backend].
type backend struct {
	// Driver is the queue storage under test.
	Driver jobs.Driver
	// Credits is the ledger storage the driver charges and refunds.
	Credits credits.Store
	// Events returns the outbox events recorded for an account by
	// completions, with their ID, Type, CreatedAt and Payload as written.
	Events func(ctx context.Context, account string) ([]jobs.Event, error)
}

// fromStore returns what the suite uses of b.
func fromStore(tb testing.TB, b *store.Backend) backend {
	tb.Helper()
	if b == nil || b.Jobs == nil || b.Credits == nil || b.Outbox == nil {
		tb.Fatal("jobstest: the backend needs Jobs, Credits and Outbox")
	}
	return backend{
		Driver:  b.Jobs,
		Credits: b.Credits,
		Events: func(ctx context.Context, account string) ([]jobs.Event, error) {
			return jobevents.List(ctx, b.Outbox, account)
		},
	}
}

// Run checks that backends made by newBackend behave as [jobs.Driver]
// (and, when implemented, [jobs.ChargingDriver] and [jobs.Notifier])
// promise. Each subtest runs in parallel with its own backend from
// newBackend; the suite's assertions about leasing assume that no other
// test enqueues jobs into the same backend, so return a fresh namespace
// every time.
func Run(t *testing.T, newBackend func(tb testing.TB) *store.Backend) {
	tests := []struct {
		name string
		f    func(t *testing.T, b *bundle)
	}{
		{"EnqueueIDsIncrease", testEnqueueIDs},
		{"GetWithinAccount", testGetWithinAccount},
		{"EnqueueChargedInsufficient", testChargedInsufficient},
		{"EnqueueChargedIdempotent", testChargedIdempotent},
		{"EnqueueChargedFingerprint", testChargedFingerprint},
		{"LeaseIsExclusive", testLeaseExclusive},
		{"DrainByPool", testDrainByPool},
		{"ConcurrentWorkersCompleteOnce", testConcurrentWorkers},
		{"UnknownRefundedWithEvent", testUnknownRefund},
		{"DuplicateEventChangesNothing", testDuplicateEvent},
		{"CrashedWorkerRescued", testCrashRescue},
		{"CrashedWorkerRecoveredByPool", testCrashPool},
		{"RescueAfterCompleteKeepsResult", testRescueRace},
		{"RescueRaceConcurrent", testRescueRaceConcurrent},
		{"Heartbeat", testHeartbeat},
		{"RetryBackoff", testRetry},
		{"RetriesExhaustedCompleteUnknown", testExhausted},
		{"Cleanup", testCleanup},
		{"PoolDrainsOnCancel", testPoolDrain},
		{"NotifierWakesPool", testNotifier},
		{"ContextCanceled", testCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			be := fromStore(t, newBackend(t))
			q, err := jobs.NewQueue(be.Driver, credits.New(be.Credits, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.f(t, &bundle{backend: be, q: q, ledger: credits.New(be.Credits, nil)})
		})
	}
}

type bundle struct {
	backend
	q      *jobs.Queue
	ledger *credits.Ledger
}

func account() string { return "acct-" + uuid.NewString() }

func emails(n int, tag string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user%d-%s@example.org", i, tag)
	}
	return out
}

// validatorFunc adapts a function to [jobs.Validator].
type validatorFunc func(ctx context.Context, email string) (emailcheck.Result, error)

func (f validatorFunc) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	return f(ctx, email)
}

func likely(_ context.Context, email string) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	return r, nil
}

// checkIncreasing fails t unless ids are numeric text, strictly increasing.
func checkIncreasing(t *testing.T, ids []string) {
	t.Helper()
	var prev *big.Int
	for _, id := range ids {
		n, ok := new(big.Int).SetString(id, 10)
		if !ok || n.Sign() < 0 || n.String() != id {
			t.Fatalf("id %q is not canonical numeric text", id)
		}
		if prev != nil && n.Cmp(prev) <= 0 {
			t.Fatalf("id %s does not follow %s", id, prev)
		}
		prev = n
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustEnqueue(t *testing.T, b *bundle, acct string, n int) []string {
	t.Helper()
	ids, err := b.q.Enqueue(context.Background(), acct, emails(n, acct))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("Enqueue returned %d ids, want %d", len(ids), n)
	}
	return ids
}

func mustLease(t *testing.T, b *bundle, max int, d time.Duration) []jobs.Lease {
	t.Helper()
	ls, err := b.Driver.Lease(context.Background(), jobs.LeaseParams{Max: max, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func balance(t *testing.T, b *bundle, acct string) int64 {
	t.Helper()
	n, err := b.ledger.Balance(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func grant(t *testing.T, b *bundle, acct string, n int64) {
	t.Helper()
	if _, err := b.ledger.Grant(context.Background(), acct, n, ""); err != nil {
		t.Fatal(err)
	}
}

func testEnqueueIDs(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	var all []string
	for i := range 3 {
		all = append(all, mustEnqueue(t, b, acct, 5+i)...)
	}
	checkIncreasing(t, all)
	for i, id := range all[:5] {
		j, err := b.q.Get(ctx, acct, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if j.ID != id || j.Account != acct || j.Email != emails(5, acct)[i] || j.State != jobs.StateActive ||
			j.Result != nil || j.Cost != 0 || j.CreatedAt.IsZero() || !j.CompletedAt.IsZero() {
			t.Fatalf("new job %+v", j)
		}
	}
	if _, err := b.q.Enqueue(ctx, acct, nil); !errors.Is(err, jobs.ErrEmptyBatch) {
		t.Fatalf("empty batch: %v", err)
	}
	if _, err := b.Driver.Enqueue(ctx, jobs.EnqueueParams{Account: acct}); !errors.Is(err, jobs.ErrEmptyBatch) {
		t.Fatalf("driver, empty batch: %v", err)
	}
}

func testGetWithinAccount(t *testing.T, b *bundle) {
	ctx := context.Background()
	a, other := account(), account()
	ids := mustEnqueue(t, b, a, 2)
	if _, err := b.q.Get(ctx, a, ids[0]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ acct, id string }{
		{other, ids[0]}, {other, ids[1]}, {a, "999999999999"}, {a, "abc"}, {a, ""}, {a, "-1"}, {a, ids[0] + "0000000000000000000000"},
	} {
		if j, err := b.q.Get(ctx, tc.acct, tc.id); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("Get(%q, %q) = %+v, %v; want ErrNotFound", tc.acct, tc.id, j, err)
		}
	}
}

func testChargedInsufficient(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 3)
	_, err := b.q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: acct, Emails: emails(4, "x"), IdempotencyKey: "batch-1"})
	var ie *credits.InsufficientError
	if !errors.Is(err, credits.ErrInsufficient) || !errors.As(err, &ie) || ie.Balance != 3 || ie.Required != 4 {
		t.Fatalf("EnqueueCharged of 4 with 3 credits: %v", err)
	}
	if n := balance(t, b, acct); n != 3 {
		t.Fatalf("balance %d after a refused batch, want 3", n)
	}
	if h, _ := b.ledger.History(ctx, acct); len(h) != 1 {
		t.Fatalf("history after a refused batch: %+v", h)
	}
	if ls := mustLease(t, b, 100, time.Second); len(ls) != 0 {
		t.Fatalf("a refused batch created %d jobs", len(ls))
	}
}

func testChargedIdempotent(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 10)
	p := jobs.EnqueueChargedParams{Account: acct, Emails: emails(3, "y"), IdempotencyKey: "batch-1"}
	ids, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	checkIncreasing(t, ids)
	if n := balance(t, b, acct); n != 7 {
		t.Fatalf("balance %d, want 7", n)
	}
	j, err := b.q.Get(ctx, acct, ids[0])
	if err != nil || j.Cost != 1 {
		t.Fatalf("charged job %+v, %v; want cost 1", j, err)
	}
	again, err := b.q.EnqueueCharged(ctx, p)
	if _, ok := b.Driver.(jobs.ChargingDriver); !ok {
		if !errors.Is(err, jobs.ErrBatchReplayed) {
			t.Fatalf("replayed batch: %v, want ErrBatchReplayed", err)
		}
	} else if err != nil || strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("replayed batch: %v, %v; want the original ids %v", again, err, ids)
	}
	p.Emails = emails(2, "z")
	if _, err := b.q.EnqueueCharged(ctx, p); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("key reused with another count: %v, want ErrIdempotencyConflict", err)
	}
	if n := balance(t, b, acct); n != 7 {
		t.Fatalf("balance %d after replays, want 7", n)
	}
	if ls := mustLease(t, b, 100, time.Second); len(ls) != 3 {
		t.Fatalf("%d jobs exist, want 3", len(ls))
	}
	// Without a key, every call is a new batch.
	p = jobs.EnqueueChargedParams{Account: acct, Emails: emails(2, "w")}
	for range 2 {
		if _, err := b.q.EnqueueCharged(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if n := balance(t, b, acct); n != 3 {
		t.Fatalf("balance %d, want 3", n)
	}
}

// testChargedFingerprint: a key reused for a batch of the same size but
// another fingerprint is a conflict, and charges nothing.
func testChargedFingerprint(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 10)
	p := jobs.EnqueueChargedParams{Account: acct, Emails: emails(3, "f"), IdempotencyKey: "batch-fp", Fingerprint: "fp-1"}
	ids, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.q.EnqueueCharged(ctx, p)
	if _, ok := b.Driver.(jobs.ChargingDriver); !ok {
		if !errors.Is(err, jobs.ErrBatchReplayed) {
			t.Fatalf("replayed batch: %v, want ErrBatchReplayed", err)
		}
	} else if err != nil || strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("replayed batch: %v, %v; want the original ids %v", again, err, ids)
	}
	other := p
	other.Emails = emails(3, "g")
	other.Fingerprint = "fp-2"
	if _, err := b.q.EnqueueCharged(ctx, other); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("key reused with another fingerprint: %v, want ErrIdempotencyConflict", err)
	}
	if n := balance(t, b, acct); n != 7 {
		t.Fatalf("balance %d after replays, want 7", n)
	}
	if ls := mustLease(t, b, 100, time.Second); len(ls) != 3 {
		t.Fatalf("%d jobs exist, want 3", len(ls))
	}
}

func testLeaseExclusive(t *testing.T, b *bundle) {
	acct := account()
	ids := mustEnqueue(t, b, acct, 10)
	first := mustLease(t, b, 4, time.Minute)
	if len(first) != 4 {
		t.Fatalf("leased %d, want 4", len(first))
	}
	for i, l := range first {
		if l.ID != ids[i] || l.Token == "" || l.Account != acct || l.Email == "" || !l.ExpiresAt.After(time.Now()) {
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
	if _, err := b.Driver.Lease(context.Background(), jobs.LeaseParams{Max: 0, Duration: time.Second}); err == nil {
		t.Fatal("Lease with Max 0 succeeded")
	}
}

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

func (c *counter) hook(_ context.Context, j jobs.Job) {
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

func checkCompleted(t *testing.T, b *bundle, acct string, ids []string) {
	t.Helper()
	for _, id := range ids {
		j, err := b.q.Get(context.Background(), acct, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if j.State != jobs.StateCompleted || j.Result == nil || j.Result.Email != j.Email || j.CompletedAt.IsZero() {
			t.Fatalf("job %s not completed with its result: %+v", id, j)
		}
	}
}

func testDrainByPool(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 1000)
	ids, err := b.q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: acct, Emails: emails(1000, "drain")})
	if err != nil {
		t.Fatal(err)
	}
	checkIncreasing(t, ids)
	var c counter
	var validated atomic.Int64
	v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		validated.Add(1)
		return likely(ctx, email)
	})
	stop := runPool(t, b, v, &jobs.PoolConfig{Workers: 8, LeaseDuration: 2 * time.Second, PollInterval: 10 * time.Millisecond, OnComplete: c.hook})
	waitFor(t, 20*time.Second, "1,000 completions", func() bool { return c.total() >= 1000 })
	stop()
	c.checkOnce(t, ids)
	if validated.Load() != 1000 {
		t.Errorf("validated %d times, want 1000", validated.Load())
	}
	checkCompleted(t, b, acct, ids)
	j, _ := b.q.Get(ctx, acct, ids[0])
	if j.Result.Meta.Source != emailcheck.SourceAPIAsync || j.Result.Confidence.Status != emailcheck.StatusLikely {
		t.Errorf("result %+v, want source api_async and status LIKELY", j.Result)
	}
	if n := balance(t, b, acct); n != 0 {
		t.Errorf("balance %d, want 0", n)
	}
}

func testConcurrentWorkers(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 1000)
	var mu sync.Mutex
	done := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				ls, err := b.Driver.Lease(ctx, jobs.LeaseParams{Max: 10, Duration: 5 * time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				if len(ls) == 0 {
					return
				}
				for _, l := range ls {
					r, _ := likely(ctx, l.Email)
					if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
						t.Errorf("Complete(%s): %v", l.ID, err)
						continue
					}
					mu.Lock()
					done[l.ID]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if done[id] != 1 {
			t.Fatalf("job %s completed %d times", id, done[id])
		}
	}
	checkCompleted(t, b, acct, ids)
}

func testUnknownRefund(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 6)
	batch := []string{"a@ok.example", "b@unknown.example", "c@ok.example", "d@unknown.example", "e@ok.example"}
	ids, err := b.q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: acct, Emails: batch, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		r, _ := likely(ctx, email)
		if strings.Contains(email, "unknown") {
			r.Confidence.Status = emailcheck.StatusUnknown
			r.Confidence.Score = 0
		}
		return r, nil
	})
	var c counter
	created := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	newEvent := func(_ context.Context, j jobs.Job, r emailcheck.Result) (*jobs.Event, error) {
		if j.Email == "c@ok.example" {
			return nil, nil // no event for this job
		}
		return &jobs.Event{
			ID:        "evt_" + j.ID,
			Type:      "test.completed",
			CreatedAt: created,
			Payload:   []byte(`{"job_id":"` + j.ID + `","status":"` + string(r.Confidence.Status) + `"}`),
		}, nil
	}
	stop := runPool(t, b, v, &jobs.PoolConfig{Workers: 2, LeaseDuration: time.Second, PollInterval: 10 * time.Millisecond, OnComplete: c.hook, NewEvent: newEvent})
	waitFor(t, 10*time.Second, "5 completions", func() bool { return c.total() >= 5 })
	stop()
	c.checkOnce(t, ids)
	if n := balance(t, b, acct); n != 1+2 {
		t.Fatalf("balance %d, want 3 (1 left, 2 UNKNOWN refunded)", n)
	}
	h, err := b.ledger.History(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	refunds := 0
	for _, e := range h {
		if e.Reason == credits.ReasonRefund {
			refunds++
			if e.Delta != 1 || !strings.Contains(e.Reference, ids[1]) && !strings.Contains(e.Reference, ids[3]) {
				t.Errorf("refund entry %+v does not name its job", e)
			}
		}
	}
	if refunds != 2 {
		t.Errorf("%d refund entries, want 2", refunds)
	}
	evs, err := b.Events(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("%d outbox events, want 4 (one job had none)", len(evs))
	}
	got := map[string]jobs.Event{}
	for _, e := range evs {
		got[e.ID] = e
		if e.Type != "test.completed" || !e.CreatedAt.Equal(created) {
			t.Errorf("event %s: type %q, created %v; want test.completed, %v", e.ID, e.Type, e.CreatedAt, created)
		}
	}
	for i, id := range ids {
		e, ok := got["evt_"+id]
		if i == 2 {
			if ok {
				t.Errorf("job %s has event %+v, want none", id, e)
			}
			continue
		}
		want := "LIKELY"
		if i == 1 || i == 3 {
			want = "UNKNOWN"
		}
		if !strings.Contains(string(e.Payload), want) {
			t.Errorf("event of job %s: %q, want status %s", id, e.Payload, want)
		}
	}
	if evs, _ := b.Events(ctx, account()); len(evs) != 0 {
		t.Errorf("another account has %d events", len(evs))
	}
}

// testDuplicateEvent completes a job with an event whose id is already in
// the outbox: the completion fails as a whole (no result, no refund, no
// second event) and the lease still holds.
func testDuplicateEvent(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 2)
	ids, err := b.q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: acct, Emails: emails(2, "dup")})
	if err != nil {
		t.Fatal(err)
	}
	ls := mustLease(t, b, 2, time.Minute)
	if len(ls) != 2 {
		t.Fatalf("leased %d, want 2", len(ls))
	}
	ev := &jobs.Event{ID: "evt_dup_" + ids[0], Type: "test.completed", Payload: []byte(`{}`)}
	r, _ := likely(ctx, ls[0].Email)
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: r, Event: ev}); err != nil {
		t.Fatal(err)
	}
	r = jobs.UnknownResult(ls[1].Email)
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: ls[1].ID, Token: ls[1].Token, Result: r, Refund: 1, Event: ev}); err == nil {
		t.Fatal("completion with a duplicate event id succeeded")
	}
	if j, err := b.q.Get(ctx, acct, ls[1].ID); err != nil || j.State != jobs.StateActive || j.Result != nil {
		t.Fatalf("job after the failed completion: %+v, %v; want active without result", j, err)
	}
	if n := balance(t, b, acct); n != 0 {
		t.Fatalf("balance %d after the failed completion, want 0 (no refund)", n)
	}
	if evs, err := b.Events(ctx, acct); err != nil || len(evs) != 1 {
		t.Fatalf("%d events (%v), want 1", len(evs), err)
	}
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: ls[1].ID, Token: ls[1].Token, Result: r, Refund: 1}); err != nil {
		t.Fatalf("the lease did not survive the failed completion: %v", err)
	}
	if n := balance(t, b, acct); n != 1 {
		t.Fatalf("balance %d, want 1 (refunded)", n)
	}
}

func testCrashRescue(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 50)
	// The lease is long enough that a loaded machine cannot let it expire
	// before the first rescue, and the sleep outlasts it.
	crashed := mustLease(t, b, 100, 500*time.Millisecond)
	if len(crashed) != 50 {
		t.Fatalf("leased %d, want 50", len(crashed))
	}
	if n, err := b.q.RescueExpired(ctx); err != nil || n != 0 {
		t.Fatalf("rescue before expiry: %d, %v", n, err)
	}
	// Rescue until all 50 expired leases are back, whatever the
	// machine's load; never more than 50.
	n := 0
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
		if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); !errors.Is(err, jobs.ErrLeaseLost) {
			t.Fatalf("completion under an expired, rescued lease: %v, want ErrLeaseLost", err)
		}
	}
	for _, l := range again {
		if l.Errors != 1 {
			t.Fatalf("rescued job %s has Errors %d, want 1", l.ID, l.Errors)
		}
		r, _ := likely(ctx, l.Email)
		if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	checkCompleted(t, b, acct, ids)
}

func testCrashPool(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 100)
	ids, err := b.q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: acct, Emails: emails(100, "crash")})
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
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // the old lease would have expired by now
	if n, err := b.q.RescueExpired(ctx); err != nil || n != 0 {
		t.Fatalf("rescue after completion: %d, %v; want 0", n, err)
	}
	j, err := b.q.Get(ctx, acct, ids[0])
	if err != nil || j.State != jobs.StateCompleted || j.Result == nil || j.Result.Provider.Name != "Marker" {
		t.Fatalf("completed job after rescue: %+v, %v", j, err)
	}
	if ls := mustLease(t, b, 10, time.Second); len(ls) != 0 {
		t.Fatalf("a completed job was leased again: %+v", ls)
	}
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Fatalf("second completion: %v, want ErrLeaseLost", err)
	}
	if err := b.Driver.Retry(ctx, jobs.RetryParams{ID: l.ID, Token: l.Token}); !errors.Is(err, jobs.ErrLeaseLost) {
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
				err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: ls[i].ID, Token: ls[i].Token, Result: r})
				switch {
				case err == nil:
					completed[i] = true
				case !errors.Is(err, jobs.ErrLeaseLost):
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
		if completed[i] != (j.State == jobs.StateCompleted) || completed[i] != (j.Result != nil) {
			t.Fatalf("job %s: Complete succeeded %v, but state %s result %v", l.ID, completed[i], j.State, j.Result)
		}
	}
}

func testHeartbeat(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	mustEnqueue(t, b, acct, 1)
	// Margins are wide enough for a loaded machine: each renewal comes
	// well before the lease would end.
	l := mustLease(t, b, 1, 400*time.Millisecond)[0]
	for range 3 {
		time.Sleep(100 * time.Millisecond)
		exp, err := b.Driver.Heartbeat(ctx, jobs.HeartbeatParams{ID: l.ID, Token: l.Token, Duration: 600 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if !exp.After(time.Now().Add(300 * time.Millisecond)) {
			t.Fatalf("heartbeat expiry %v is not about 600ms from now", exp)
		}
		if n, err := b.q.RescueExpired(ctx); err != nil || n != 0 {
			t.Fatalf("rescued a renewed lease: %d, %v", n, err)
		}
	}
	bad := l
	bad.Token = "not-the-token"
	if _, err := b.Driver.Heartbeat(ctx, jobs.HeartbeatParams{ID: bad.ID, Token: bad.Token, Duration: time.Second}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Fatalf("heartbeat with a wrong token: %v, want ErrLeaseLost", err)
	}
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: bad.Token}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Fatalf("complete with a wrong token: %v, want ErrLeaseLost", err)
	}
	unknown := l
	unknown.ID = "999999999999"
	if _, err := b.Driver.Heartbeat(ctx, jobs.HeartbeatParams{ID: unknown.ID, Token: unknown.Token, Duration: time.Second}); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("heartbeat of an unknown job: %v, want ErrNotFound", err)
	}
	r, _ := likely(ctx, l.Email)
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Driver.Heartbeat(ctx, jobs.HeartbeatParams{ID: l.ID, Token: l.Token, Duration: time.Second}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Fatalf("heartbeat of a completed job: %v, want ErrLeaseLost", err)
	}
}

func testRetry(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 1)
	l := mustLease(t, b, 1, time.Minute)[0]
	if err := b.Driver.Retry(ctx, jobs.RetryParams{ID: l.ID, Token: l.Token, RunAt: time.Now().Add(time.Second), Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	j, err := b.q.Get(ctx, acct, ids[0])
	if err != nil || j.State != jobs.StateActive || j.Errors != 1 || j.LastError != "boom" {
		t.Fatalf("job after retry: %+v, %v", j, err)
	}
	if ls := mustLease(t, b, 1, time.Minute); len(ls) != 0 {
		t.Fatal("job leased before its run-at")
	}
	if err := b.Driver.Retry(ctx, jobs.RetryParams{ID: l.ID, Token: l.Token}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Fatalf("second retry under the same lease: %v, want ErrLeaseLost", err)
	}
	var l2 jobs.Lease
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
	if err := b.Driver.Retry(ctx, jobs.RetryParams{ID: l2.ID, Token: l2.Token}); err != nil {
		t.Fatal(err)
	}
	ls := mustLease(t, b, 1, time.Minute)
	if len(ls) != 1 || ls[0].Errors != 1 {
		t.Fatalf("handed-back job: %+v", ls)
	}
}

func testExhausted(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 2)
	ids, err := b.q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: acct, Emails: []string{"a@x.example", "b@x.example"}})
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
		if err != nil || j.State != jobs.StateCompleted || j.Result == nil || j.Result.Confidence.Status != emailcheck.StatusUnknown || j.Result.Email != j.Email {
			t.Fatalf("exhausted job: %+v, %v; want completed UNKNOWN", j, err)
		}
	}
	if n := balance(t, b, acct); n != 2 {
		t.Fatalf("balance %d, want 2 (both refunded)", n)
	}
}

func testCleanup(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 3)
	ls := mustLease(t, b, 2, time.Minute)
	r, _ := likely(ctx, ls[0].Email)
	if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: r}); err != nil {
		t.Fatal(err)
	}
	n, err := b.Driver.Cleanup(ctx, jobs.CleanupParams{CompletedBefore: time.Now().Add(-time.Minute)})
	if err != nil || n != 0 {
		t.Fatalf("cleanup of recent jobs: %d, %v; want 0", n, err)
	}
	if n, err := b.q.Cleanup(ctx); err != nil || n != 0 {
		t.Fatalf("cleanup with the default retention: %d, %v; want 0", n, err)
	}
	n, err = b.Driver.Cleanup(ctx, jobs.CleanupParams{CompletedBefore: time.Now().Add(time.Minute)})
	if err != nil || n != 1 {
		t.Fatalf("cleanup: %d, %v; want 1", n, err)
	}
	if _, err := b.q.Get(ctx, acct, ids[0]); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("removed job: %v, want ErrNotFound", err)
	}
	for _, id := range ids[1:] {
		if j, err := b.q.Get(ctx, acct, id); err != nil || j.State != jobs.StateActive {
			t.Fatalf("active job %s after cleanup: %+v, %v", id, j, err)
		}
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
	if _, ok := b.Driver.(jobs.Notifier); !ok {
		t.Skip("driver does not implement jobs.Notifier")
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
	runPool(t, &bundle{backend: b.backend, q: q, ledger: b.ledger}, validatorFunc(likely),
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
	if _, err := b.Driver.Lease(ctx, jobs.LeaseParams{Max: 1, Duration: time.Second}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lease with a canceled context: %v", err)
	}
}

// subscribeSpy is a driver whose Subscribe closes subscribed once the
// underlying driver has subscribed.
type subscribeSpy struct {
	jobs.Driver
	subscribed chan struct{}
	once       sync.Once
}

func (s *subscribeSpy) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ch, err := s.Driver.(jobs.Notifier).Subscribe(ctx)
	if err == nil {
		s.once.Do(func() { close(s.subscribed) })
	}
	return ch, err
}
