package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/validmail/validmail/store/pgstore"
	"github.com/validmail/validmail/webhook"
)

// BenchmarkWebhookOutbox measures the outbox's share of a delivery: one
// op is an event enqueued, then leased (64 at a time), its attempt
// recorded and the delivery marked delivered.
func BenchmarkWebhookOutbox(b *testing.B) {
	w := newStore(b).Backend().Outbox.(*pgstore.Webhooks)
	ctx := context.Background()
	now := time.Now()
	payload := []byte(`{"type":"validation.completed","data":{"job_id":"1","result":{"email":"a@b.example"}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ev := webhook.Event{ID: fmt.Sprintf("msg_%d", i), AccountID: "acct", Type: webhook.TypeValidationCompleted, JobID: "1", CreatedAt: now, Payload: payload}
		if err := w.Enqueue(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	for done := 0; done < b.N; {
		ds, err := w.Lease(ctx, webhook.LeaseParams{Now: now, Limit: 64, Duration: time.Minute})
		if err != nil || len(ds) == 0 {
			b.Fatalf("Lease: %d, %v", len(ds), err)
		}
		for _, d := range ds {
			if err := w.RecordAttempt(ctx, d.Lease, webhook.Attempt{At: now, StatusCode: 204, URL: "https://r.example/hook"}); err != nil {
				b.Fatal(err)
			}
			if err := w.MarkDelivered(ctx, d.Lease, now); err != nil {
				b.Fatal(err)
			}
		}
		done += len(ds)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
