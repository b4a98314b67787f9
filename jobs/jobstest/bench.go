package jobstest

import (
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

// Bench measures a backend made by newBackend, which must return a fresh,
// empty backend on each call:
//
//   - Enqueue1000: one plain 1,000-job batch per op (ms/batch);
//   - EnqueueCharged1000: one charged 1,000-job batch per op;
//   - Drain: one job per op, worked by a pool of 8 workers whose validator
//     answers at once, as with a warm DNS cache (jobs/s);
//   - DrainBusy: Drain beside two CPU-bound processes (sh), as on a
//     machine shared with other work.
func Bench(b *testing.B, newBackend func(tb testing.TB) Backend) {
	batch := make([]string, 1000)
	for i := range batch {
		batch[i] = fmt.Sprintf("user%d@bench.example.org", i)
	}
	ctx := context.Background()

	b.Run("ReadBatch1000", func(b *testing.B) {
		// A completed batch of 1,000 read the way an export reads it:
		// pages of 200 jobs with their results.
		be := newBackend(b)
		bd, ok := be.Driver.(jobsdriver.BatchDriver)
		if !ok {
			b.Skip("driver does not implement jobsdriver.BatchDriver")
		}
		q := newQueue(b, be)
		ids, err := q.Enqueue(ctx, "bench", batch)
		if err != nil {
			b.Fatal(err)
		}
		for left := len(ids); left > 0; {
			ls, err := be.Driver.Lease(ctx, jobsdriver.LeaseParams{Max: 500, Duration: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			for _, l := range ls {
				r, _ := instant{}.Validate(ctx, l.Email)
				if err := be.Driver.Complete(ctx, jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: r}); err != nil {
					b.Fatal(err)
				}
			}
			left -= len(ls)
		}
		b.ReportAllocs()
		for b.Loop() {
			n, after := 0, ""
			for {
				js, err := bd.BatchJobs(ctx, jobtype.BatchJobsParams{AccountID: "bench", BatchID: ids[0], Limit: 200, After: after})
				if err != nil {
					b.Fatal(err)
				}
				if len(js) == 0 {
					break
				}
				n += len(js)
				after = js[len(js)-1].ID
			}
			if n != len(ids) {
				b.Fatalf("read %d jobs", n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/batch")
	})

	b.Run("Enqueue1000", func(b *testing.B) {
		q := newQueue(b, newBackend(b))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := q.Enqueue(ctx, "bench", batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/batch")
	})

	b.Run("EnqueueCharged1000", func(b *testing.B) {
		var q *jobs.Queue
		fresh := func() {
			be := newBackend(b)
			grant := credits.Change{AccountID: "bench", Delta: 1 << 40, Reason: credits.ReasonGrant}
			if _, err := be.Credits.Apply(ctx, grant); err != nil {
				b.Fatal(err)
			}
			q = newQueue(b, be)
		}
		fresh()
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if n++; n%100 == 0 { // bound the data a run accumulates
				b.StopTimer()
				fresh()
				b.StartTimer()
			}
			if _, err := q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: "bench", Emails: batch}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/batch")
	})

	b.Run("Drain", func(b *testing.B) { benchDrain(b, newBackend(b), batch) })

	b.Run("DrainBusy", func(b *testing.B) {
		// As Drain, beside two CPU-bound processes: a machine shared with
		// other work, where lock waits and polling show.
		for range 2 {
			busy := exec.Command("sh", "-c", "while :; do :; done")
			if err := busy.Start(); err != nil {
				b.Skipf("no CPU-bound process beside the drain: %v", err)
			}
			b.Cleanup(func() {
				busy.Process.Kill()
				busy.Wait()
			})
		}
		benchDrain(b, newBackend(b), batch)
	})
}

// benchDrain drains b.N jobs from be with a pool of 8 workers whose
// validator answers at once, and reports jobs/s.
func benchDrain(b *testing.B, be Backend, batch []string) {
	ctx := context.Background()
	q := newQueue(b, be)
	for left := b.N; left > 0; left -= len(batch) {
		if _, err := q.Enqueue(ctx, "bench", batch[:min(left, len(batch))]); err != nil {
			b.Fatal(err)
		}
	}
	var done atomic.Int64
	finished := make(chan struct{})
	p, err := jobs.NewPool(q, instant{}, &jobs.PoolConfig{
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
	b.ReportAllocs()
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

func newQueue(tb testing.TB, be Backend) *jobs.Queue {
	q, err := jobs.NewQueue(be.Driver, credits.New(be.Credits, nil), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// instant is a validator that answers at once, like one whose DNS cache
// holds every domain.
type instant struct{}

func (instant) Validate(_ context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	return r, nil
}
