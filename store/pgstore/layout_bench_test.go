package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/pgstore"
)

// layoutRound is how many jobs one round of BenchmarkQueueLayout drains
// on each layout.
const layoutRound = 2000

// BenchmarkQueueLayout drains jobs over the same code on both table
// layouts: jobs and batches partitioned by day (what Migrate makes) and
// plain tables. Both hold the same days of completed jobs first
// (VALIDMAIL_LAYOUT_DAYS days of VALIDMAIL_LAYOUT_PER_DAY jobs, 6 of
// 20,000 unless set), as a deployment keeping a week does. The rounds
// alternate, each layout going first in every other round (ABBA), so
// that a machine speeding up or slowing down during the run weighs on
// both alike. b.N is the jobs drained on each layout; it reports each
// layout's rate and their ratio:
//
//	go test -run '^$' -bench 'QueueLayout' -benchtime 20000x -count 5 ./store/pgstore
func BenchmarkQueueLayout(b *testing.B) {
	days, perDay := envInt("VALIDMAIL_LAYOUT_DAYS", 6), envInt("VALIDMAIL_LAYOUT_PER_DAY", 20_000)
	ctx := context.Background()
	pool := testPool(b)
	now := time.Now()

	plainSchema := testSchema(b, pool)
	plain, err := pgstore.OpenUnpartitioned(ctx, pool, plainSchema)
	if err != nil {
		b.Fatal(err)
	}
	partSchema := testSchema(b, pool)
	part, err := pgstore.New(ctx, pool, &pgstore.Config{Schema: partSchema})
	if err != nil {
		b.Fatal(err)
	}
	for back := days; back >= 1; back-- {
		if err := part.EnsurePartitions(ctx, now.AddDate(0, 0, -back)); err != nil {
			b.Fatal(err)
		}
	}
	if err := part.EnsurePartitions(ctx, now); err != nil {
		b.Fatal(err)
	}
	layouts := []*layoutRun{
		{name: "plain", store: plain},
		{name: "partitioned", store: part},
	}
	for i, schema := range []string{plainSchema, partSchema} {
		fillDays(b, pool, schema, now, days, perDay)
		for _, table := range []string{"jobs", "batches"} {
			if _, err := pool.Exec(ctx, `VACUUM ANALYZE "`+schema+`".`+table); err != nil {
				b.Fatal(err)
			}
		}
		q, err := jobs.NewQueue(layouts[i].store.Backend().Jobs, credits.New(layouts[i].store.Backend().Credits, nil), nil)
		if err != nil {
			b.Fatal(err)
		}
		layouts[i].queue = q
	}

	b.ReportAllocs()
	b.ResetTimer()
	for round, left := 0, b.N; left > 0; round, left = round+1, left-layoutRound {
		n := min(left, layoutRound)
		order := layouts
		if round%2 == 1 {
			order = []*layoutRun{layouts[1], layouts[0]}
		}
		for _, l := range order {
			b.StopTimer()
			l.enqueue(b, n)
			b.StartTimer()
			l.drain(b, n)
		}
	}
	b.StopTimer()
	plainRate := layouts[0].rate()
	partRate := layouts[1].rate()
	b.ReportMetric(plainRate, "plain-jobs/s")
	b.ReportMetric(partRate, "partitioned-jobs/s")
	b.ReportMetric(partRate/plainRate, "partitioned/plain")
}

// layoutRun is one layout of BenchmarkQueueLayout and the time its
// drains took.
type layoutRun struct {
	name    string
	store   *pgstore.Store
	queue   *jobs.Queue
	jobs    int
	elapsed time.Duration
}

// enqueue adds n jobs in batches of up to 1,000.
func (l *layoutRun) enqueue(b *testing.B, n int) {
	b.Helper()
	for left := n; left > 0; left -= 1000 {
		emails := make([]string, min(left, 1000))
		for i := range emails {
			emails[i] = fmt.Sprintf("user%d@bench.example.org", i)
		}
		if _, err := l.queue.Enqueue(context.Background(), "bench", emails); err != nil {
			b.Fatal(err)
		}
	}
}

// drain runs a pool of 8 workers until n jobs are completed, and counts
// the time it took.
func (l *layoutRun) drain(b *testing.B, n int) {
	b.Helper()
	var done atomic.Int64
	finished := make(chan struct{})
	p, err := jobs.NewPool(l.queue, instantValidator{}, &jobs.PoolConfig{
		Workers:         8,
		CleanupInterval: -1,
		OnComplete: func(context.Context, jobtype.Job) {
			if done.Add(1) == int64(n) {
				close(finished)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- p.Run(ctx) }()
	<-finished
	l.elapsed += time.Since(start)
	l.jobs += n
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
}

// rate is the jobs drained per second over every round.
func (l *layoutRun) rate() float64 {
	return float64(l.jobs) / l.elapsed.Seconds()
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

// envInt is the integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
