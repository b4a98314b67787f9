package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobstest"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/storetest"
)

// plainDriver hides every optional interface of its driver, so the Queue
// takes its fallback paths (charge through the ledger, then enqueue) and the
// Pool only polls.
type plainDriver struct{ jobsdriver.Driver }

func TestFallbackDriver(t *testing.T) {
	jobstest.Run(t, func(tb testing.TB) jobstest.Backend {
		b := storetest.Jobs(tb, memstore.NewBackend())
		b.Driver = plainDriver{b.Driver}
		return b
	})
}

// failingEnqueue fails every Enqueue after the ledger charged.
type failingEnqueue struct{ jobsdriver.Driver }

var errDown = errors.New("database down")

func (failingEnqueue) Enqueue(context.Context, jobs.EnqueueParams) ([]string, error) {
	return nil, errDown
}

func TestFallbackRefundsFailedEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	ledger := credits.New(s, nil)
	if _, err := ledger.Grant(ctx, "a", 5, ""); err != nil {
		t.Fatal(err)
	}
	q, err := jobs.NewQueue(failingEnqueue{s.Backend().Jobs}, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{AccountID: "a", Emails: []string{"x@y.example", "z@y.example"}, IdempotencyKey: "k"})
	if !errors.Is(err, errDown) {
		t.Fatalf("EnqueueCharged: %v, want the driver's error", err)
	}
	if n, _ := ledger.Balance(ctx, "a"); n != 5 {
		t.Fatalf("balance %d after a failed enqueue, want 5", n)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	if _, err := jobs.NewQueue(nil, nil, nil); err == nil {
		t.Error("NewQueue(nil) succeeded")
	}
	if _, err := jobs.NewQueue(s.Backend().Jobs, nil, &jobs.Config{Retention: -time.Hour}); err == nil {
		t.Error("negative retention accepted")
	}
	q, err := jobs.NewQueue(s.Backend().Jobs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := emailcheck.New(nil)
	for _, cfg := range []*jobs.PoolConfig{
		{Workers: -1},
		{LeaseDuration: time.Second, HeartbeatInterval: 2 * time.Second},
	} {
		if _, err := jobs.NewPool(q, v, cfg); err == nil {
			t.Errorf("NewPool(%+v) succeeded", cfg)
		}
	}
	if _, err := jobs.NewPool(q, nil, nil); err == nil {
		t.Error("NewPool without a validator succeeded")
	}
	if _, err := jobs.NewPool(q, v, nil); err != nil {
		t.Errorf("NewPool with defaults: %v", err)
	}
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		failures int
		min, max time.Duration
	}{
		{1, time.Second, 1100 * time.Millisecond},
		{2, 2 * time.Second, 2200 * time.Millisecond},
		{4, 8 * time.Second, 8800 * time.Millisecond},
		{20, 5 * time.Minute, 330 * time.Second},
	} {
		d := jobs.DefaultBackoff(tc.failures)
		if d < tc.min || d > tc.max {
			t.Errorf("DefaultBackoff(%d) = %v, want within [%v, %v]", tc.failures, d, tc.min, tc.max)
		}
	}
}

func TestUnknownResult(t *testing.T) {
	t.Parallel()
	r := jobs.UnknownResult("a@b.example")
	if r.Email != "a@b.example" || r.Confidence.Status != emailcheck.StatusUnknown || r.Confidence.EquivalentDomains == nil || r.Meta.Source != emailcheck.SourceAPIAsync {
		t.Fatalf("UnknownResult = %+v", r)
	}
}

// The validator type the pool takes is satisfied by the real one.
var _ jobs.Validator = (*emailcheck.Validator)(nil)
