package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/webhook"
)

type validatorFunc func(ctx context.Context, email string) (emailcheck.Result, error)

func (f validatorFunc) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	return f(ctx, email)
}

// runPool starts p and returns a function that stops it and waits.
func runPool(t *testing.T, p *jobs.Pool) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitJob(t *testing.T, q *jobs.Queue, account, id string, ok func(jobs.Job) bool) jobs.Job {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		j, err := q.Get(context.Background(), account, id)
		if err == nil && ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %+v, %v", id, j, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A validation that uses all of JobTimeout still has its failure recorded:
// the retry is not sent with the validation's expired context.
func TestPoolRecordsTimedOutValidation(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	q, err := jobs.NewQueue(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := q.Enqueue(context.Background(), "acct", []string{"slow@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	slow := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		<-ctx.Done()
		return emailcheck.Result{}, ctx.Err()
	})
	p, err := jobs.NewPool(q, slow, &jobs.PoolConfig{
		Workers: 1, JobTimeout: 30 * time.Millisecond, PollInterval: 5 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Hour },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := runPool(t, p)
	j := waitJob(t, q, "acct", ids[0], func(j jobs.Job) bool { return j.Errors == 1 })
	stop()
	if j.LastError == "" {
		t.Fatalf("timed-out validation recorded as %+v; want one error with its cause", j)
	}
}

// An event that can never be built does not keep a job active forever: on
// the last attempt the job completes without it.
func TestPoolCompletesWhenEventKeepsFailing(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	q, err := jobs.NewQueue(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := q.Enqueue(context.Background(), "acct", []string{"a@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	likely := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		r := emailcheck.Result{Email: email}
		r.Confidence.Status = emailcheck.StatusLikely
		return r, nil
	})
	p, err := jobs.NewPool(q, likely, &jobs.PoolConfig{
		Workers: 1, MaxAttempts: 3, PollInterval: 5 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Millisecond },
		NewEvents: func(context.Context, jobs.Job, emailcheck.Result) (ev, batch *webhook.Event, err error) {
			return nil, nil, errors.New("outbox unavailable")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	j := waitJob(t, q, "acct", ids[0], func(j jobs.Job) bool { return j.State == jobs.StateCompleted })
	if j.Result == nil || j.Errors != 2 {
		t.Fatalf("job %+v; want completed with its result after 2 failed attempts", j)
	}
}
