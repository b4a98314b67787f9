package redisstore_test

import (
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

// TestBatchEventStoredBefore: the completion of a batch's last job
// writes its batch.completed delivery with the batch's data in a field of
// its own and, for the instances of a release before the field, in the
// payload after a zero byte; the same delivery as a release before the
// field wrote it, the data in the payload after a zero byte, is leased
// and listed as the same bytes, with the same data.
func TestBatchEventStoredBefore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, c, _ := setup(t, nil)
	ids, err := s.Enqueue(ctx, jobtype.EnqueueParams{AccountID: "acct", Emails: []string{"a@example.org", "b@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, jobsdriver.LeaseParams{Max: 10, Duration: time.Minute})
	if err != nil || len(ls) != len(ids) {
		t.Fatalf("leased %d, %v", len(ls), err)
	}
	created := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	var ev webhook.Event
	for _, l := range ls {
		r := emailcheck.Result{Email: l.Email}
		r.Confidence.Status = emailcheck.StatusLikely
		ev = webhook.NewBatchEvent("acct", l.ID, created)
		if err := s.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r, BatchEvent: &ev}); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"type":"batch.completed","timestamp":"2030-01-02T03:04:05.123Z","data":{"batch_id":"` + ids[0] + `","total":2,"counts":{"LIKELY":2}}}`
	key := s.KeyName("acct", "wh:ev:"+ev.ID)
	h, err := c.HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The payload holds the data too, as the releases before the field
	// read it (a rolling upgrade's older instances deliver it alike).
	if h["batch"] == "" || h["payload"] != "\x00"+h["batch"] {
		t.Fatalf("the completion wrote payload %q and batch %q; want the data in batch, and after a zero byte in payload", h["payload"], h["batch"])
	}
	ob := s.Backend().Outbox
	check := func(form string) {
		t.Helper()
		ds, err := ob.Lease(ctx, webhook.LeaseParams{Now: created.Add(time.Minute), Limit: 10, Duration: time.Second})
		if err != nil || len(ds) != 1 {
			t.Fatalf("%s: leased %d, %v; want 1", form, len(ds), err)
		}
		listed, err := ob.Deliveries(ctx, webhook.ListParams{AccountID: "acct"})
		if err != nil || len(listed) != 1 {
			t.Fatalf("%s: listed %d, %v; want 1", form, len(listed), err)
		}
		for _, d := range []webhook.Delivery{ds[0], listed[0]} {
			if d.ID != ev.ID || string(d.Payload) != want || d.Batch == nil || d.Batch.BatchID != ids[0] || d.Batch.Counts["LIKELY"] != 2 {
				t.Fatalf("%s: %s %s with batch %+v; want %s %s", form, d.ID, d.Payload, d.Batch, ev.ID, want)
			}
		}
		if err := ob.Reschedule(ctx, ds[0].Lease, created); err != nil {
			t.Fatal(err)
		}
	}
	check("typed")
	// As the release before the field left it.
	if err := c.HSet(ctx, key, "payload", "\x00"+h["batch"]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HDel(ctx, key, "batch").Err(); err != nil {
		t.Fatal(err)
	}
	check("earlier form")
}
