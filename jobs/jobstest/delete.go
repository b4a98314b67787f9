package jobstest

// Deleting a batch: its jobs, results and rows are gone at once.

import (
	"errors"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// testDeleteBatch erases a batch with a completed job, a leased one and
// one waiting: each read then answers ErrNotFound, the held lease writes
// nothing, no job of it is leased again; another account cannot delete
// it, and the account's other batch is untouched.
func testDeleteBatch(t *testing.T, b *bundle) {
	if _, ok := b.Driver.(jobsdriver.BatchDeleter); !ok {
		t.Skip("driver does not implement jobsdriver.BatchDeleter")
	}
	ctx := t.Context()
	acct, other := account(), account()
	gone := mustEnqueue(t, b, acct, 3)
	kept := mustEnqueue(t, b, acct, 2)
	ls := mustLease(t, b, 2, time.Minute) // gone's first two, in the account's order
	if len(ls) != 2 || ls[0].ID != gone[0] || ls[1].ID != gone[1] {
		t.Fatalf("leased %+v; want %v's first two jobs", ls, gone)
	}
	res := emailcheck.Result{Email: ls[0].Email}
	res.Confidence.Status = emailcheck.StatusLikely
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: ls[0].ID, Token: ls[0].Token, Result: res}); err != nil {
		t.Fatal(err)
	}

	if err := b.q.DeleteBatch(ctx, other, gone[0]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("another account's delete: %v, want ErrNotFound", err)
	}
	if err := b.q.DeleteBatch(ctx, acct, gone[1]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("delete by a job id that names no batch: %v, want ErrNotFound", err)
	}
	if err := b.q.DeleteBatch(ctx, acct, gone[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.q.DeleteBatch(ctx, acct, gone[0]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("a second delete: %v, want ErrNotFound", err)
	}
	if _, err := b.q.Batch(ctx, acct, gone[0]); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("Batch after delete: %v", err)
	}
	if js, err := b.q.BatchJobs(ctx, jobtype.BatchJobsParams{AccountID: acct, BatchID: gone[0], Limit: 10}); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("BatchJobs after delete: %d jobs, %v", len(js), err)
	}
	for _, id := range gone {
		if _, err := b.q.Get(ctx, acct, id); !errors.Is(err, jobtype.ErrNotFound) {
			t.Fatalf("job %s after delete: %v", id, err)
		}
	}
	bs, err := b.q.Batches(ctx, jobtype.BatchesParams{AccountID: acct, Limit: 10})
	if err != nil || len(bs) != 1 || bs[0].ID != kept[0] {
		t.Fatalf("batches after delete: %+v, %v; want only %s", bs, err, kept[0])
	}
	// The worker still holding a job of it writes nothing.
	held := ls[1]
	if _, err := b.Driver.Heartbeat(ctx, jobsdriver.HeartbeatParams{ID: held.ID, Token: held.Token, Duration: time.Minute}); !lostOrGone(err) {
		t.Fatalf("heartbeat of a deleted job: %v", err)
	}
	if err := b.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: held.ID, Token: held.Token, Result: res}); !lostOrGone(err) {
		t.Fatalf("completion of a deleted job: %v", err)
	}
	if err := b.Driver.Retry(ctx, jobsdriver.RetryParams{ID: held.ID, Token: held.Token}); !lostOrGone(err) {
		t.Fatalf("retry of a deleted job: %v", err)
	}
	if _, err := b.Driver.RescueExpired(ctx, jobsdriver.RescueParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Driver.Cleanup(ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// Only the other batch's jobs are leased from now on.
	var leased []string
	for range 5 {
		for _, l := range mustLease(t, b, 10, time.Minute) {
			leased = append(leased, l.ID)
		}
	}
	if len(leased) != 2 || leased[0] != kept[0] || leased[1] != kept[1] {
		t.Fatalf("leased %v after the delete; want only %v", leased, kept)
	}
	if bt, err := b.q.Batch(ctx, acct, kept[0]); err != nil || bt.Total != 2 {
		t.Fatalf("the other batch: %+v, %v", bt, err)
	}
}

func lostOrGone(err error) bool {
	return errors.Is(err, jobtype.ErrNotFound) || errors.Is(err, jobtype.ErrLeaseLost)
}

// testListDelete erases a committed list: its description and rows are
// ErrNotFound, its charge stays.
func testListDelete(t *testing.T, l *listBundle) {
	if _, ok := l.driver.(jobsdriver.BatchDeleter); !ok {
		t.Skip("driver does not implement jobsdriver.BatchDeleter")
	}
	a := l.account(t, 100)
	w := l.stage(t, a, true, listRows("a@example.org", "junk", "b@example.org", "A@example.org"))
	info, err := w.Commit(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.q.DeleteBatch(l.ctx, a, info.BatchID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.q.List(l.ctx, a, info.BatchID); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("List after delete: %v", err)
	}
	if rows, err := l.q.ListRows(l.ctx, jobtype.ListRowsParams{AccountID: a, BatchID: info.BatchID, After: -1, Limit: 10}); !errors.Is(err, jobtype.ErrNotFound) {
		t.Fatalf("ListRows after delete: %d rows, %v", len(rows), err)
	}
	if ls, err := l.driver.Lease(l.ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("leased %d jobs of a deleted list, %v", len(ls), err)
	}
	if _, err := l.driver.Cleanup(l.ctx, jobsdriver.CleanupParams{CompletedBefore: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.ledger.Balance(l.ctx, a); got != 98 {
		t.Fatalf("balance %d after the delete; want 98: the charge stays", got)
	}
}
