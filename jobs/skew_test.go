package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
)

// newFixtureOn is newFixture over driver d, in front of b's jobs.
func newFixtureOn(t *testing.T, d jobsdriver.Driver, b *backend.Backend) fixture {
	t.Helper()
	ledger := credits.New(b.Credits, nil)
	q, err := jobs.NewQueue(d, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{q: q, ledger: ledger}
}

// skewedDriver is a driver seen from a host whose clock is behind the
// store's by skew: the run-at of every job the pool hands back for later
// reads skew earlier by the store's clock.
type skewedDriver struct {
	jobsdriver.Driver
	skew time.Duration
}

func (d skewedDriver) Retry(ctx context.Context, p jobsdriver.RetryParams) error {
	if !p.RunAt.IsZero() {
		p.RunAt = p.RunAt.Add(-d.skew)
	}
	return d.Driver.Retry(ctx, p)
}

// TestSlowLaneWithSkewedClock: the workers' host clock may lag the
// store's by a few seconds (the store keeps time for leases and run-at:
// workers' clocks need not agree). An account whose every lookup hangs
// fills its share of the slow lane; its next jobs go back to the queue
// for a couple of seconds. Whatever the clocks, they wait there behind
// the other accounts' jobs, which complete meanwhile.
func TestSlowLaneWithSkewedClock(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{0, 10 * time.Second} {
		t.Run(fmt.Sprintf("host clock %v behind", skew), func(t *testing.T) {
			t.Parallel()
			b := memstore.NewBackend()
			f := newFixtureOn(t, skewedDriver{Driver: b.Jobs, skew: skew}, b)
			dead := make([]string, 300)
			for i := range dead {
				dead[i] = fmt.Sprintf("u%d@d%d.dead.example.net", i, i)
			}
			f.submit(t, "hung", "", dead)
			live := make([]string, 200)
			for i := range live {
				live[i] = fmt.Sprintf("u%d@live.example.net", i)
			}
			liveIDs := f.submit(t, "quiet", "", live)

			release := make(chan struct{})
			defer close(release)
			v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
				if strings.HasSuffix(email, "dead.example.net") {
					select {
					case <-release:
					case <-ctx.Done():
					}
					return unknownResult(email), emailcheck.ErrResolverUnreachable
				}
				return likelyResult(email), nil
			})
			p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
				Workers: 4, PollInterval: 5 * time.Millisecond, SlowAfter: 10 * time.Millisecond, MaxSlow: 20,
			})
			if err != nil {
				t.Fatal(err)
			}
			runPool(t, p)
			// Taking turns, the quiet account's jobs complete within a
			// second on an idle machine; a minute is for a busy one.
			deadline := time.Now().Add(time.Minute)
			for !f.completed("quiet", liveIDs) {
				if time.Now().After(deadline) {
					n := 0
					for _, id := range liveIDs {
						if j, err := f.q.Get(context.Background(), "quiet", id); err == nil && j.State == jobs.StateCompleted {
							n++
						}
					}
					t.Fatalf("%d of the quiet account's %d jobs completed in a minute while the other account's lookups hang", n, len(liveIDs))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
