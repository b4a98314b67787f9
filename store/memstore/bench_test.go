package memstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
)

type cachedValidator struct{}

func (cachedValidator) Validate(_ context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	return r, nil
}

// BenchmarkDrain measures how fast 8 workers drain the queue with a
// validator that answers at once (a warm cache).
func BenchmarkDrain(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	ledger := credits.New(s, nil)
	q, err := jobs.NewQueue(s, ledger, nil)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]string, 1000)
	for i := range batch {
		batch[i] = fmt.Sprintf("user%d@example.org", i)
	}
	for left := b.N; left > 0; left -= len(batch) {
		if _, err := q.Enqueue(ctx, "acct", batch[:min(left, len(batch))]); err != nil {
			b.Fatal(err)
		}
	}
	var done atomic.Int64
	finished := make(chan struct{})
	p, err := jobs.NewPool(q, cachedValidator{}, &jobs.PoolConfig{
		Workers: 8,
		OnComplete: func(context.Context, jobs.Job) {
			if done.Add(1) == int64(b.N) {
				close(finished)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	b.ResetTimer()
	go p.Run(runCtx)
	<-finished
	b.StopTimer()
	cancel()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueueCharged measures charging and enqueueing one 1,000-job
// batch. The store is replaced every 100 batches to bound memory.
func BenchmarkEnqueueCharged(b *testing.B) {
	ctx := context.Background()
	batch := make([]string, 1000)
	for i := range batch {
		batch[i] = fmt.Sprintf("user%d@example.org", i)
	}
	var q *jobs.Queue
	fresh := func() {
		s := memstore.New()
		if _, err := s.Apply(ctx, credits.Change{Account: "acct", Delta: 1 << 50, Reason: credits.ReasonGrant}); err != nil {
			b.Fatal(err)
		}
		q, _ = jobs.NewQueue(s, credits.New(s, nil), nil)
	}
	fresh()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i++; i%100 == 0 {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
		if _, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: "acct", Emails: batch}); err != nil {
			b.Fatal(err)
		}
	}
}
