package jobs_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

// gatedWrites is a driver whose group completions pass a gate, as on a
// database whose disk stalls or fills: they wait until release is closed
// (when it is not nil) or their context ends, and fail while failing is
// set. It counts the jobs leased, those handed back for later (no
// attempt counted), those completed, and the most held at once.
type gatedWrites struct {
	jobsdriver.Driver
	release chan struct{}
	failing atomic.Bool

	leased, deferred, done atomic.Int64

	mu      sync.Mutex
	maxHeld int64
}

func (g *gatedWrites) Lease(ctx context.Context, p jobsdriver.LeaseParams) ([]jobsdriver.Lease, error) {
	ls, err := g.Driver.Lease(ctx, p)
	n := g.leased.Add(int64(len(ls)))
	g.mu.Lock()
	g.maxHeld = max(g.maxHeld, n-g.done.Load()-g.deferred.Load())
	g.mu.Unlock()
	return ls, err
}

func (g *gatedWrites) Retry(ctx context.Context, p jobsdriver.RetryParams) error {
	if p.Error == "" && !p.RunAt.IsZero() {
		g.deferred.Add(1)
	}
	return g.Driver.Retry(ctx, p)
}

// errDiskFull is what a completion write fails with while failing is set.
var errDiskFull = errors.New("disk full")

func (g *gatedWrites) CompleteMany(ctx context.Context, ps []jobsdriver.CompleteParams) []error {
	if g.release != nil {
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	errs := make([]error, len(ps))
	for i, p := range ps {
		switch {
		case ctx.Err() != nil:
			errs[i] = ctx.Err()
		case g.failing.Load():
			errs[i] = errDiskFull
		default:
			if errs[i] = g.Complete(ctx, p); errs[i] == nil {
				g.done.Add(1)
			}
		}
	}
	return errs
}

// The gate itself: a write waits for release and then goes through, and
// fails while failing is set.
func TestGatedWrites(t *testing.T) {
	g := &gatedWrites{Driver: nopDriver{}, release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if errs := g.CompleteMany(ctx, make([]jobsdriver.CompleteParams, 2)); !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[1], context.Canceled) {
		t.Fatalf("a write whose context ended before release: %v", errs)
	}
	g.failing.Store(true)
	close(g.release)
	if errs := g.CompleteMany(context.Background(), make([]jobsdriver.CompleteParams, 1)); !errors.Is(errs[0], errDiskFull) {
		t.Fatalf("a write while failing: %v", errs)
	}
	g.failing.Store(false)
	if errs := g.CompleteMany(context.Background(), make([]jobsdriver.CompleteParams, 1)); errs[0] != nil || g.done.Load() != 1 {
		t.Fatalf("a write released: %v, %d done", errs, g.done.Load())
	}
}

// nopDriver completes every job; the rest of its driver is not used.
type nopDriver struct{ jobsdriver.Driver }

func (nopDriver) Complete(context.Context, jobsdriver.CompleteParams) error { return nil }
