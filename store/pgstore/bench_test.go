package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
)

func benchEmails(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user%d@bench.example.org", i)
	}
	return out
}

// BenchmarkEnqueue1000 measures the enqueue of one 1,000-job batch.
func BenchmarkEnqueue1000(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	emails := benchEmails(1000)
	for b.Loop() {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Account: "bench", Emails: emails}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/batch")
}

// BenchmarkEnqueueCharged1000 measures the charge and enqueue of one
// 1,000-job batch in one transaction.
func BenchmarkEnqueueCharged1000(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	emails := benchEmails(1000)
	for b.Loop() {
		b.StopTimer()
		if _, err := s.Apply(ctx, creditsGrant("bench", 1000)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: "bench", Emails: emails}); err != nil {
			b.Fatal(err)
		}
	}
}

type instantValidator struct{}

func (instantValidator) Validate(_ context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	return r, nil
}

// BenchmarkDrain measures how fast a pool of 8 workers with an instant
// validator drains jobs: each op is one job.
func BenchmarkDrain(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	q, err := jobs.NewQueue(s, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	emails := benchEmails(1000)
	total := 0
	for total < b.N {
		n := min(b.N-total, len(emails))
		if _, err := q.Enqueue(ctx, "bench", emails[:n]); err != nil {
			b.Fatal(err)
		}
		total += n
	}
	p, err := jobs.NewPool(q, instantValidator{}, &jobs.PoolConfig{Workers: 8, PollInterval: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- p.Run(runCtx) }()
	for p.Completed() < int64(total) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "jobs/s")
}
