package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs"
)

func batch(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user%d@bench.example.org", i)
	}
	return out
}

// BenchmarkEnqueue1000 enqueues batches of 1,000 jobs: one script each.
func BenchmarkEnqueue1000(b *testing.B) {
	s, _, _ := setup(b, nil)
	ctx := context.Background()
	emails := batch(1000)
	for b.Loop() {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Account: "A", Emails: emails}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueueCharged1000 charges and enqueues batches of 1,000 jobs:
// one script each.
func BenchmarkEnqueueCharged1000(b *testing.B) {
	s, _, _ := setup(b, nil)
	ctx := context.Background()
	if _, err := s.Apply(ctx, credits.Change{Account: "A", Delta: 1 << 40, Reason: credits.ReasonGrant}); err != nil {
		b.Fatal(err)
	}
	emails := batch(1000)
	for b.Loop() {
		if _, err := s.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: "A", Emails: emails}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDrain measures a pool of 8 workers with an instant validator
// draining b.N jobs; the jobs/s figure is the throughput.
func BenchmarkDrain(b *testing.B) {
	s, _, _ := setup(b, nil)
	ctx := context.Background()
	for n := b.N; n > 0; n -= 1000 {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Account: "A", Emails: batch(min(n, 1000)), Cost: 1}); err != nil {
			b.Fatal(err)
		}
	}
	q, err := jobs.NewQueue(s, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	pool, err := jobs.NewPool(q, stubValidator{}, &jobs.PoolConfig{Workers: 8})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- pool.Run(runCtx) }()
	for pool.Completed() < int64(b.N) {
		time.Sleep(200 * time.Microsecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}
