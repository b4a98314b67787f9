package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/webhook"
)

// TestBatchEventWritesEarlierFormToo: the completion of a batch's last job
// (one at a time, and several at once) writes its batch.completed delivery
// with the data in the batch column and, for the instances of the release
// before the column, in the payload after a zero byte; the earlier
// release's reading of that payload gives the same bytes as the column.
func TestBatchEventWritesEarlierFormToo(t *testing.T) {
	t.Parallel()
	for _, many := range []bool{false, true} {
		ctx := context.Background()
		pool := testPool(t)
		s, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: testSchema(t, pool)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(ctx, creditsGrant("acct", 3)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: "acct", Emails: []string{"a@x.example", "b@x.example", "c@x.example"}}); err != nil {
			t.Fatal(err)
		}
		ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 3, Duration: time.Minute})
		if err != nil || len(ls) != 3 {
			t.Fatalf("Lease: %d, %v", len(ls), err)
		}
		created := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
		var ps []jobsdriver.CompleteParams
		for i, l := range ls {
			r := emailcheck.Result{Email: l.Email}
			r.Confidence.Status = []emailcheck.Status{emailcheck.StatusLikely, emailcheck.StatusLikely, emailcheck.StatusUnknown}[i]
			ev := webhook.NewBatchEvent("acct", l.ID, created)
			ps = append(ps, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r, BatchEvent: &ev})
		}
		if many {
			for _, err := range s.CompleteMany(ctx, ps) {
				if err != nil {
					t.Fatal(err)
				}
			}
		} else {
			for _, p := range ps {
				if err := s.Complete(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		var payload []byte
		var batch *string
		if err := pool.QueryRow(ctx, `SELECT payload, batch::text FROM "`+s.Schema()+`".webhook_deliveries WHERE type = 'batch.completed'`).Scan(&payload, &batch); err != nil {
			t.Fatal(err)
		}
		old := webhook.Event{ID: "x", Type: webhook.TypeBatchCompleted, CreatedAt: created, Payload: payload}
		if err := old.Expand(); err != nil || batch == nil || old.Batch == nil {
			t.Fatalf("many %v: payload %q batch %v: %v", many, payload, batch, err)
		}
		want := `{"type":"batch.completed","timestamp":"2030-01-02T03:04:05.123Z","data":{"batch_id":"` + old.Batch.BatchID + `","total":3,"counts":{"LIKELY":2,"UNKNOWN":1}}}`
		if string(old.Payload) != want {
			t.Errorf("many %v: the earlier release reads %s; want %s", many, old.Payload, want)
		}
	}
}
