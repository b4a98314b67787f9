package jobstest

// Completing jobs: results, refunds and the outbox event in one step.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

func checkCompleted(t *testing.T, b *bundle, acct string, ids []string) {
	t.Helper()
	for _, id := range ids {
		j, err := b.q.Get(context.Background(), acct, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if j.State != jobtype.StateCompleted || j.Result == nil || j.Result.Email != j.Email || j.CompletedAt.IsZero() {
			t.Fatalf("job %s not completed with its result: %+v", id, j)
		}
	}
}

func testDrainByPool(t *testing.T, b *bundle) {
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 1000)
	ids, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(1000, "drain")})
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
				ls, err := b.Driver.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: 5 * time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				if len(ls) == 0 {
					return
				}
				for _, l := range ls {
					r, _ := likely(ctx, l.Email)
					if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
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
	ids, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: batch, IdempotencyKey: "k"})
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
	newEvents := func(_ context.Context, j jobtype.Job, r emailcheck.Result) (ev, batch *webhook.Event, err error) {
		if j.Email == "c@ok.example" {
			return nil, nil, nil // no event for this job
		}
		return &webhook.Event{
			ID:        "evt_" + j.ID,
			Type:      "test.completed",
			CreatedAt: created,
			Payload:   []byte(`{"job_id":"` + j.ID + `","status":"` + string(r.Confidence.Status) + `"}`),
		}, nil, nil
	}
	stop := runPool(t, b, v, &jobs.PoolConfig{Workers: 2, LeaseDuration: time.Second, PollInterval: 10 * time.Millisecond, OnComplete: c.hook, NewEvents: newEvents})
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
	got := map[string]webhook.Event{}
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
	ids, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(2, "dup")})
	if err != nil {
		t.Fatal(err)
	}
	ls := mustLease(t, b, 2, time.Minute)
	if len(ls) != 2 {
		t.Fatalf("leased %d, want 2", len(ls))
	}
	ev := &webhook.Event{ID: "evt_dup_" + ids[0], Type: "test.completed", Payload: []byte(`{}`)}
	r, _ := likely(ctx, ls[0].Email)
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: r, Event: ev}); err != nil {
		t.Fatal(err)
	}
	r = jobs.UnknownResult(ls[1].Email)
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[1].ID, Token: ls[1].Token, Result: r, Refund: 1, Event: ev}); err == nil {
		t.Fatal("completion with a duplicate event id succeeded")
	}
	if j, err := b.q.Get(ctx, acct, ls[1].ID); err != nil || j.State != jobtype.StateActive || j.Result != nil {
		t.Fatalf("job after the failed completion: %+v, %v; want active without result", j, err)
	}
	if n := balance(t, b, acct); n != 0 {
		t.Fatalf("balance %d after the failed completion, want 0 (no refund)", n)
	}
	if evs, err := b.Events(ctx, acct); err != nil || len(evs) != 1 {
		t.Fatalf("%d events (%v), want 1", len(evs), err)
	}
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[1].ID, Token: ls[1].Token, Result: r, Refund: 1}); err != nil {
		t.Fatalf("the lease did not survive the failed completion: %v", err)
	}
	if n := balance(t, b, acct); n != 1 {
		t.Fatalf("balance %d, want 1 (refunded)", n)
	}
}

// testCompleteMany: a driver that completes several jobs at once treats
// each item as if completed alone: a lost lease or a duplicate event fails
// that item only.
func testCompleteMany(t *testing.T, b *bundle) {
	bc, ok := b.Driver.(jobsdriver.BatchCompleter)
	if !ok {
		t.Skip("driver does not implement jobsdriver.BatchCompleter")
	}
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 4)
	if _, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(4, "many")}); err != nil {
		t.Fatal(err)
	}
	ls := mustLease(t, b, 4, time.Minute)
	if len(ls) != 4 {
		t.Fatalf("leased %d, want 4", len(ls))
	}
	// An event already in the outbox, for the third item.
	dup := &webhook.Event{ID: "evt_many_" + ls[0].ID, Type: "test.completed", Payload: []byte(`{}`)}
	r0, _ := likely(ctx, ls[0].Email)
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: r0, Event: dup}); err != nil {
		t.Fatal(err)
	}
	ps := make([]jobsdriver.CompleteParams, 0, 3)
	for i, l := range ls[1:] {
		p := jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: jobs.UnknownResult(l.Email), Refund: 1,
			Event: &webhook.Event{ID: "evt_many_" + l.ID, Type: "test.completed", Payload: []byte(`{}`)}}
		switch i {
		case 0:
			p.Token = "not-the-token"
		case 1:
			p.Event = dup
		}
		ps = append(ps, p)
	}
	// In reverse order: the driver must answer in the caller's.
	slices.Reverse(ps)
	errs := bc.CompleteMany(ctx, ps)
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], webhook.ErrDuplicate) || !errors.Is(errs[2], jobtype.ErrLeaseLost) {
		t.Fatalf("CompleteMany: %v; want nil, a duplicate event, a lost lease", errs)
	}
	for i, l := range ls {
		j, err := b.q.Get(ctx, acct, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done := j.State == jobtype.StateCompleted; done != (i == 0 || i == 3) {
			t.Errorf("job %d: state %s", i, j.State)
		}
	}
	if n := balance(t, b, acct); n != 1 {
		t.Fatalf("balance %d, want 1: only the completed UNKNOWN job refunded", n)
	}
	if evs, err := b.Events(ctx, acct); err != nil || len(evs) != 2 {
		t.Fatalf("%d events (%v), want 2", len(evs), err)
	}
}
