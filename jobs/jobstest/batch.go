package jobstest

// Batches: what one enqueue created, read as one.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

func testBatches(t *testing.T, b *bundle) {
	bd, ok := b.Driver.(jobsdriver.BatchDriver)
	if !ok {
		t.Skip("driver does not implement jobsdriver.BatchDriver")
	}
	ctx := context.Background()
	acct, other := account(), account()
	var batches [][]string
	for _, n := range []int{3, 5, 2} {
		batches = append(batches, mustEnqueue(t, b, acct, n))
		mustEnqueue(t, b, other, 1) // interleaved with another account's
	}
	for _, ids := range batches {
		for _, id := range ids {
			j, err := b.q.Get(ctx, acct, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.BatchID != ids[0] {
				t.Fatalf("job %s: batch %q, want %s (its first job)", id, j.BatchID, ids[0])
			}
		}
	}

	got, err := bd.Batch(ctx, acct, batches[1][0])
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != batches[1][0] || got.AccountID != acct || got.Total != 5 || got.Completed != 0 ||
		got.State != jobtype.StateActive || got.CreatedAt.IsZero() || !got.CompletedAt.IsZero() || len(got.Counts) != 0 {
		t.Fatalf("new batch %+v", got)
	}
	for _, id := range []string{batches[1][0], "999999999", "nonsense"} {
		if _, err := bd.Batch(ctx, other, id); !errors.Is(err, jobtype.ErrNotFound) {
			t.Errorf("Batch(other account, %s): %v, want ErrNotFound", id, err)
		}
	}

	// Complete the middle batch: four LIKELY, one UNKNOWN.
	ls := mustLease(t, b, 100, time.Minute)
	for _, l := range ls {
		if l.BatchID != batches[1][0] {
			if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		r, _ := likely(ctx, l.Email)
		if l.ID == batches[1][4] {
			r.Confidence.Status = emailcheck.StatusUnknown
		}
		if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = bd.Batch(ctx, acct, batches[1][0])
	if err != nil {
		t.Fatal(err)
	}
	if got.State != jobtype.StateCompleted || got.Completed != 5 || got.CompletedAt.IsZero() ||
		got.Counts[emailcheck.StatusLikely] != 4 || got.Counts[emailcheck.StatusUnknown] != 1 || len(got.Counts) != 2 {
		t.Fatalf("completed batch %+v", got)
	}

	// The account's batches, newest first, paged.
	page, err := bd.Batches(ctx, jobtype.BatchesParams{AccountID: acct, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != batches[2][0] || page[1].ID != batches[1][0] || page[0].Total != 2 {
		t.Fatalf("first page %+v", page)
	}
	page, err = bd.Batches(ctx, jobtype.BatchesParams{AccountID: acct, Limit: 2, Before: page[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 1 || page[0].ID != batches[0][0] || page[0].Total != 3 {
		t.Fatalf("second page %+v", page)
	}

	// A batch's jobs in submission order, paged.
	var seen []string
	after := ""
	for range 10 {
		js, err := bd.BatchJobs(ctx, jobtype.BatchJobsParams{AccountID: acct, BatchID: batches[1][0], Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(js) == 0 {
			break
		}
		for _, j := range js {
			seen = append(seen, j.ID)
			if j.State != jobtype.StateCompleted || j.Result == nil {
				t.Fatalf("job %s of the completed batch: %+v", j.ID, j)
			}
		}
		after = js[len(js)-1].ID
	}
	if len(seen) != 5 {
		t.Fatalf("paged %v, want the 5 jobs %v", seen, batches[1])
	}
	for i := range seen {
		if seen[i] != batches[1][i] {
			t.Fatalf("paged %v, want %v in submission order", seen, batches[1])
		}
	}
	if _, err := bd.BatchJobs(ctx, jobtype.BatchJobsParams{AccountID: other, BatchID: batches[1][0], Limit: 10}); !errors.Is(err, jobtype.ErrNotFound) {
		t.Errorf("BatchJobs of another account's batch: %v, want ErrNotFound", err)
	}
}

// batchEvents returns the account's events of the type.
func batchEvents(t *testing.T, b *bundle, acct, typ string) []webhook.Event {
	t.Helper()
	evs, err := b.Events(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	var out []webhook.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// checkBatchEvent checks that the account has exactly one batch event of
// batch id, with the payload [webhook.BatchCompletedPayload] gives for
// the completed batch.
func checkBatchEvent(t *testing.T, b *bundle, acct, id string) {
	t.Helper()
	bd := b.Driver.(jobsdriver.BatchDriver)
	got, err := bd.Batch(context.Background(), acct, id)
	if err != nil {
		t.Fatal(err)
	}
	var mine []webhook.Event
	for _, e := range batchEvents(t, b, acct, batchEventType) {
		if strings.Contains(string(e.Payload), `"batch_id":"`+id+`"`) {
			mine = append(mine, e)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("batch %s: %d completion events, want exactly 1", id, len(mine))
	}
	e := mine[0]
	data := jobsdriver.BatchCompleted(got)
	want := webhook.BatchCompletedPayload(e.CreatedAt, data)
	if string(e.Payload) != string(want) {
		t.Fatalf("batch event payload\n got %s\nwant %s", e.Payload, want)
	}
	if e.Batch == nil || e.Batch.BatchID != data.BatchID || e.Batch.Total != data.Total || !maps.Equal(e.Batch.Counts, data.Counts) {
		t.Fatalf("batch event data %+v, want %+v", e.Batch, data)
	}
}

// batchEventType is the event type the suite asks for.
const batchEventType = "batch.completed"

// newBatchEvent returns a batch.completed event for the job's
// completion, written only if it is its batch's last.
func newBatchEvent(j jobtype.Job) *webhook.Event {
	e := webhook.NewBatchEvent(j.AccountID, j.ID, time.Now())
	return &e
}

// batchEventsOnly is a [jobs.PoolConfig.NewEvents] that asks for a batch
// event on every completion, and for no other event.
func batchEventsOnly(_ context.Context, j jobtype.Job, _ emailcheck.Result) (ev, batch *webhook.Event, err error) {
	return nil, newBatchEvent(j), nil
}

// testBatchEventOnce: every completion of a batch asks for the batch's
// event; only the last writes it, once, with the batch's final counts,
// while several workers complete the batch's jobs at once.
func testBatchEventOnce(t *testing.T, b *bundle) {
	if _, ok := b.Driver.(jobsdriver.BatchDriver); !ok {
		t.Skip("driver does not implement jobsdriver.BatchDriver")
	}
	ctx := context.Background()
	acct := account()

	// Driver level: three jobs, each completion asking; the last writes.
	ids := mustEnqueue(t, b, acct, 3)
	ls := mustLease(t, b, 3, time.Minute)
	for i, l := range ls {
		r, _ := likely(ctx, l.Email)
		if i == 1 {
			r.Confidence.Status = emailcheck.StatusDisposable
		}
		ev := newBatchEvent(l.Job)
		if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r, BatchEvent: ev}); err != nil {
			t.Fatal(err)
		}
		if n := len(batchEvents(t, b, acct, batchEventType)); (i < 2 && n != 0) || (i == 2 && n != 1) {
			t.Fatalf("after %d of 3 completions: %d batch events", i+1, n)
		}
	}
	checkBatchEvent(t, b, acct, ids[0])
	evs := batchEvents(t, b, acct, batchEventType)
	if p := string(evs[0].Payload); !strings.Contains(p, `"total":3,"counts":{"DISPOSABLE":1,"LIKELY":2}}}`) {
		t.Fatalf("payload %s", p)
	}

	// Pool level: 8 workers race through 4 batches of 50.
	acct = account()
	var firsts []string
	for range 4 {
		firsts = append(firsts, mustEnqueue(t, b, acct, 50)[0])
	}
	c := &counter{n: map[string]int{}}
	stop := runPool(t, b, validatorFunc(likely), &jobs.PoolConfig{Workers: 8, LeaseDuration: time.Minute, PollInterval: 5 * time.Millisecond,
		OnComplete: c.hook, NewEvents: batchEventsOnly})
	waitFor(t, 30*time.Second, "200 completions", func() bool { return c.total() == 200 })
	stop()
	for _, id := range firsts {
		checkBatchEvent(t, b, acct, id)
	}
}

// testBatchSource: a batch records who submitted it, its jobs carry it,
// and the pool reports it as the results' meta.source.
func testBatchSource(t *testing.T, b *bundle) {
	bd, ok := b.Driver.(jobsdriver.BatchDriver)
	if !ok {
		t.Skip("driver does not implement jobsdriver.BatchDriver")
	}
	ctx := context.Background()
	acct := account()
	dash, err := b.q.EnqueueWith(ctx, jobtype.EnqueueParams{AccountID: acct, Emails: emails(2, "d"), Source: jobtype.SourceDashboard})
	if err != nil {
		t.Fatal(err)
	}
	grant(t, b, acct, 2)
	api, err := b.q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(2, "a")})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{dash[0]: jobtype.SourceDashboard, api[0]: jobtype.SourceAPI} {
		got, err := bd.Batch(ctx, acct, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Source != want {
			t.Errorf("batch %s: source %q, want %q", id, got.Source, want)
		}
	}
	if js, err := bd.Batches(ctx, jobtype.BatchesParams{AccountID: acct, Limit: 10}); err != nil || len(js) != 2 ||
		js[0].Source != jobtype.SourceAPI || js[1].Source != jobtype.SourceDashboard {
		t.Fatalf("Batches: %+v, %v", js, err)
	}
	c := &counter{n: map[string]int{}}
	stop := runPool(t, b, validatorFunc(likely), &jobs.PoolConfig{Workers: 2, PollInterval: 5 * time.Millisecond, OnComplete: c.hook})
	waitFor(t, 10*time.Second, "4 completions", func() bool { return c.total() == 4 })
	stop()
	for _, id := range slices.Concat(dash, api) {
		j, err := b.q.Get(ctx, acct, id)
		if err != nil {
			t.Fatal(err)
		}
		want := emailcheck.SourceAPIAsync
		if slices.Contains(dash, id) {
			want = emailcheck.SourceDashboard
		}
		if j.Result == nil || j.Result.Meta.Source != want {
			t.Errorf("job %s: result %+v, want meta.source %q", id, j.Result, want)
		}
	}
}

// testIdempotencyExpires: an idempotency key names its batch for the TTL
// and nothing after it: the same key then starts a new batch, charged
// anew, whatever its body.
func testIdempotencyExpires(t *testing.T, b *bundle) {
	if _, ok := b.Driver.(jobsdriver.ChargingDriver); !ok {
		t.Skip("driver does not implement jobsdriver.ChargingDriver")
	}
	ctx := context.Background()
	acct := account()
	grant(t, b, acct, 10)
	const ttl = 300 * time.Millisecond
	p := jobtype.EnqueueChargedParams{AccountID: acct, Emails: emails(2, "e"), IdempotencyKey: "k", Fingerprint: "f1", IdempotencyTTL: ttl}
	// A busy machine may take longer than the TTL between two calls; a
	// replay that came too late is a new batch, charged anew, and counted.
	start := time.Now()
	first, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	charged := len(first)
	again, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !slices.Equal(again, first) {
		if time.Since(start) < ttl {
			t.Fatalf("replay within the TTL gave %v; want %v", again, first)
		}
		charged += len(again)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	p.Emails, p.Fingerprint = emails(3, "f"), "f2"
	laterStart := time.Now()
	later, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatalf("the key after its TTL: %v, want a new batch", err)
	}
	if len(later) != 3 || later[0] == first[0] {
		t.Fatalf("the key after its TTL gave %v (first batch %v)", later, first)
	}
	charged += len(later)
	// The new batch is what the key names now.
	got, err := b.q.EnqueueCharged(ctx, p)
	if err != nil {
		t.Fatalf("replay of the new batch: %v", err)
	}
	if !slices.Equal(got, later) {
		if time.Since(laterStart) < ttl {
			t.Fatalf("replay of the new batch gave %v; want %v", got, later)
		}
		charged += len(got)
	}
	if n := balance(t, b, acct); n != 10-int64(charged) {
		t.Fatalf("balance %d, want 10 - %d charged = %d", n, charged, 10-charged)
	}
	// Cleanup copes with expired records (and removes them where the
	// backend does not expire them on its own).
	time.Sleep(ttl + 100*time.Millisecond)
	if _, err := b.q.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
}

// testBatchPagingWhileCompleting: paging a batch's jobs while they
// complete never skips or repeats one, and a batch goes with its jobs
// once they are past the retention.
func testBatchPagingWhileCompleting(t *testing.T, b *bundle) {
	bd, ok := b.Driver.(jobsdriver.BatchDriver)
	if !ok {
		t.Skip("driver does not implement jobsdriver.BatchDriver")
	}
	ctx := context.Background()
	acct := account()
	ids := mustEnqueue(t, b, acct, 10)
	var seen []string
	after := ""
	for range 20 {
		js, err := bd.BatchJobs(ctx, jobtype.BatchJobsParams{AccountID: acct, BatchID: ids[0], Limit: 3, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(js) == 0 {
			break
		}
		for _, j := range js {
			seen = append(seen, j.ID)
		}
		after = js[len(js)-1].ID
		// Complete two jobs, wherever they are, between pages.
		for _, l := range mustLease(t, b, 2, time.Minute) {
			r, _ := likely(ctx, l.Email)
			if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(seen, ids) {
		t.Fatalf("paged %v while completing, want %v", seen, ids)
	}
	for _, l := range mustLease(t, b, 10, time.Minute) {
		r, _ := likely(ctx, l.Email)
		if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := bd.Batch(ctx, acct, ids[0]); err != nil || got.State != jobtype.StateCompleted || got.Completed != 10 {
		t.Fatalf("batch after every completion: %+v, %v", got, err)
	}
	// Past the retention, the batch goes with its jobs.
	if _, err := b.Driver.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now().Add(time.Hour + cleanupGranularity(b.Driver))}); err != nil {
		t.Fatal(err)
	}
	if _, err := bd.Batch(ctx, acct, ids[0]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Errorf("batch after cleanup: %v, want ErrNotFound", err)
	}
	if bs, err := bd.Batches(ctx, jobtype.BatchesParams{AccountID: acct, Limit: 10}); err != nil || len(bs) != 0 {
		t.Errorf("batches after cleanup: %+v, %v; want none", bs, err)
	}
}
