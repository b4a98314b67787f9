package jobstest

// Batches: what one enqueue created, read as one.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
)

func testBatches(t *testing.T, b *bundle) {
	bd, ok := b.Driver.(jobs.BatchDriver)
	if !ok {
		t.Skip("driver does not implement jobs.BatchDriver")
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
		got.State != jobs.StateActive || got.CreatedAt.IsZero() || !got.CompletedAt.IsZero() || len(got.Counts) != 0 {
		t.Fatalf("new batch %+v", got)
	}
	for _, id := range []string{batches[1][0], "999999999", "nonsense"} {
		if _, err := bd.Batch(ctx, other, id); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("Batch(other account, %s): %v, want ErrNotFound", id, err)
		}
	}

	// Complete the middle batch: four LIKELY, one UNKNOWN.
	ls := mustLease(t, b, 100, time.Minute)
	for _, l := range ls {
		if l.BatchID != batches[1][0] {
			if err := b.Driver.Retry(ctx, jobs.RetryParams{ID: l.ID, Token: l.Token}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		r, _ := likely(ctx, l.Email)
		if l.ID == batches[1][4] {
			r.Confidence.Status = emailcheck.StatusUnknown
		}
		if err := b.Driver.Complete(ctx, jobs.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = bd.Batch(ctx, acct, batches[1][0])
	if err != nil {
		t.Fatal(err)
	}
	if got.State != jobs.StateCompleted || got.Completed != 5 || got.CompletedAt.IsZero() ||
		got.Counts[emailcheck.StatusLikely] != 4 || got.Counts[emailcheck.StatusUnknown] != 1 || len(got.Counts) != 2 {
		t.Fatalf("completed batch %+v", got)
	}

	// The account's batches, newest first, paged.
	page, err := bd.Batches(ctx, jobs.BatchesParams{AccountID: acct, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != batches[2][0] || page[1].ID != batches[1][0] || page[0].Total != 2 {
		t.Fatalf("first page %+v", page)
	}
	page, err = bd.Batches(ctx, jobs.BatchesParams{AccountID: acct, Limit: 2, Before: page[1].ID})
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
		js, err := bd.BatchJobs(ctx, jobs.BatchJobsParams{AccountID: acct, BatchID: batches[1][0], Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(js) == 0 {
			break
		}
		for _, j := range js {
			seen = append(seen, j.ID)
			if j.State != jobs.StateCompleted || j.Result == nil {
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
	if _, err := bd.BatchJobs(ctx, jobs.BatchJobsParams{AccountID: other, BatchID: batches[1][0], Limit: 10}); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("BatchJobs of another account's batch: %v, want ErrNotFound", err)
	}
}
