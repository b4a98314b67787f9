package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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
	q, err := jobs.NewQueue(s.Backend().Jobs, nil, nil)
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
	q, err := jobs.NewQueue(s.Backend().Jobs, nil, nil)
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

// unknownValidator is a validator that can tell its UNKNOWN for an
// address ([jobs.UnknownValidator]).
type unknownValidator struct {
	validatorFunc
	unknown func(email string, reason emailcheck.Reason) emailcheck.Result
}

func (v unknownValidator) Unknown(email string, reason emailcheck.Reason, opts ...emailcheck.CallOption) emailcheck.Result {
	return v.unknown(email, reason)
}

// A job whose attempts all fail, or whose unanswered lookup comes back
// without a result, completes with the validator's own UNKNOWN for the
// address (with the reason of the failure and the job's source), the one
// a single validation gives; a validator that cannot tell it gives
// UnknownResult.
func TestPoolGivesUpWithTheValidatorsUnknown(t *testing.T) {
	t.Parallel()
	theirs := func(email string, reason emailcheck.Reason) emailcheck.Result {
		r := jobs.UnknownResult(email)
		r.Validations.Syntax = true
		r.Confidence.Score = 40
		r.Confidence.IsRoleBased = true
		r.Reason = reason
		r.Meta.Source = "validator's"
		return r
	}
	for _, tc := range []struct {
		name     string
		err      error
		canTell  bool
		attempts int
		want     emailcheck.Result
	}{
		{"errors", errors.New("resolver crashed"), true, 3, theirs("info@example.org", emailcheck.ReasonDNSServfail)},
		{"timeouts", context.DeadlineExceeded, true, 3, theirs("info@example.org", emailcheck.ReasonDNSTimeout)},
		{"unanswered without a result", emailcheck.ErrResolverUnreachable, true, 2, theirs("info@example.org", emailcheck.ReasonDNSTimeout)},
		{"errors, validator cannot tell", errors.New("resolver crashed"), false, 3, jobs.UnknownResult("info@example.org")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := memstore.New()
			q, err := jobs.NewQueue(s.Backend().Jobs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := q.EnqueueWith(context.Background(), jobs.EnqueueParams{AccountID: "acct", Emails: []string{"info@example.org"}, Source: jobs.SourceDashboard})
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int64
			var v jobs.Validator = validatorFunc(func(context.Context, string) (emailcheck.Result, error) {
				calls.Add(1)
				return emailcheck.Result{}, tc.err
			})
			if tc.canTell {
				v = unknownValidator{v.(validatorFunc), theirs}
			}
			p, err := jobs.NewPool(q, v, &jobs.PoolConfig{
				Workers: 1, MaxAttempts: 3, UnknownAttempts: 2, PollInterval: 5 * time.Millisecond,
				Backoff:        func(int) time.Duration { return time.Millisecond },
				UnknownBackoff: func(int) time.Duration { return time.Millisecond },
			})
			if err != nil {
				t.Fatal(err)
			}
			runPool(t, p)
			j := waitJob(t, q, "acct", ids[0], func(j jobs.Job) bool { return j.State == jobs.StateCompleted })
			want := tc.want
			want.Meta.Source = emailcheck.SourceDashboard
			if got, w := string(j.Result.AppendJSON(nil)), string(want.AppendJSON(nil)); got != w {
				t.Fatalf("result\n%s\nwant\n%s", got, w)
			}
			if calls.Load() != int64(tc.attempts) || j.Errors != tc.attempts-1 {
				t.Fatalf("%d validations, %d failed attempts; want %d, %d", calls.Load(), j.Errors, tc.attempts, tc.attempts-1)
			}
		})
	}
}

// One account's hanging validations never take the whole slow lane: the
// validations of another account that turn slow still step aside and
// free their workers, so a third account's job runs.
func TestSlowLaneShared(t *testing.T) {
	t.Parallel()
	d := memstore.New()
	q, err := jobs.NewQueue(d.Backend().Jobs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	release := make(chan struct{})
	var slowB, quickDone atomic.Int64
	v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		switch {
		case strings.HasSuffix(email, "@q.example"):
			quickDone.Add(1)
		case strings.HasSuffix(email, ".b.example"):
			slowB.Add(1)
			<-release
		default:
			<-release // hangs, as at a domain that never answers
		}
		r := emailcheck.Result{Email: email}
		r.Confidence.Status = emailcheck.StatusLikely
		return r, nil
	})
	defer close(release)
	dead := make([]string, 40)
	for i := range dead {
		dead[i] = fmt.Sprintf("x@d%d.dead.example", i)
	}
	if _, err := q.Enqueue(ctx, "a", dead); err != nil {
		t.Fatal(err)
	}
	p, err := jobs.NewPool(q, v, &jobs.PoolConfig{Workers: 2, SlowAfter: 20 * time.Millisecond, MaxSlow: 8, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d validations under way", what, p.Busy())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// A's jobs take their share of the lane (half of it) and then wait in
	// the queue.
	waitUntil("A's share of the slow lane", func() bool { return p.Busy() >= 4 })
	// B's two jobs take both workers and hang.
	if _, err := q.Enqueue(ctx, "b", []string{"x@s1.b.example", "x@s2.b.example"}); err != nil {
		t.Fatal(err)
	}
	waitUntil("B's two validations", func() bool { return slowB.Load() == 2 })
	// They step aside: C's job gets a worker.
	if _, err := q.Enqueue(ctx, "c", []string{"x@q.example"}); err != nil {
		t.Fatal(err)
	}
	waitUntil("C's job, while A's and B's hang", func() bool { return quickDone.Load() == 1 })
}

// Jobs whose completion waits to be written no longer wait for a worker:
// while a group's write is slow, the pool goes on leasing and working
// jobs (up to a bound), rather than stop at its capacity; and every job
// is completed once the writes go through.
func TestPoolLeasesWhileCompletionsAreWritten(t *testing.T) {
	t.Parallel()
	d := &gatedWrites{Driver: memstore.New().Backend().Jobs, release: make(chan struct{})}
	q, err := jobs.NewQueue(d, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	emails := make([]string, 200)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@example.org", i)
	}
	ids, err := q.Enqueue(context.Background(), "acct", emails)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 2 // a capacity of 8 leases
	instant := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) { return likelyResult(email), nil })
	p, err := jobs.NewPool(q, instant, &jobs.PoolConfig{Workers: workers, PollInterval: 5 * time.Millisecond, CleanupInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	waitFor(t, 10*time.Second, "leases beyond the pool's capacity while the first write waits", func() bool {
		return d.leased.Load() >= 3*4*workers
	})
	close(d.release)
	waitFor(t, 10*time.Second, "every job completed", func() bool {
		return p.Completed() == int64(len(ids))
	})
	for _, id := range ids {
		if j, err := q.Get(context.Background(), "acct", id); err != nil || j.State != jobs.StateCompleted {
			t.Fatalf("job %s: %+v, %v", id, j, err)
		}
	}
}
