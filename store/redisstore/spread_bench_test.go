package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/backend"
)

// BenchmarkDrainAccounts drains b.N jobs of 48 accounts, which spread over
// the shards, with a pool of 8 workers on the single server.
func BenchmarkDrainAccounts(b *testing.B) {
	benchDrainAccounts(b, newBackend(b))
}

// BenchmarkClusterDrainAccounts is BenchmarkDrainAccounts on the test
// cluster, whose masters share the shards.
func BenchmarkClusterDrainAccounts(b *testing.B) {
	benchDrainAccounts(b, newClusterBackend(b))
}

func benchDrainAccounts(b *testing.B, be *backend.Backend) {
	ctx := context.Background()
	q, err := jobs.NewQueue(be.Jobs, credits.New(be.Credits, nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	const accounts = 48
	for left, i := b.N, 0; left > 0; i++ {
		n := min(left, 500)
		batch := make([]string, n)
		for j := range batch {
			batch[j] = fmt.Sprintf("user%d@bench.example.org", j)
		}
		if _, err := q.Enqueue(ctx, fmt.Sprintf("bench-%d", i%accounts), batch); err != nil {
			b.Fatal(err)
		}
		left -= n
	}
	var done atomic.Int64
	finished := make(chan struct{})
	p, err := jobs.NewPool(q, instantValidator{}, &jobs.PoolConfig{
		Workers:         8,
		CleanupInterval: -1,
		OnComplete: func(context.Context, jobtype.Job) {
			if done.Add(1) == int64(b.N) {
				close(finished)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	b.ResetTimer()
	go func() { stopped <- p.Run(runCtx) }()
	<-finished
	b.StopTimer()
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// instantValidator answers at once, like a validator whose DNS cache
// holds every domain.
type instantValidator struct{}

func (instantValidator) Validate(_ context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	return r, nil
}
