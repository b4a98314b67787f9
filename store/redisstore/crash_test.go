package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
	"github.com/validmail/validmail/webhook"
)

// Variables the crash test passes to its child processes.
const (
	envCrashPrefix = "VALIDMAIL_CRASH_PREFIX"
	envCrashDelay  = "VALIDMAIL_CRASH_DELAY"
)

const crashJobs = 1000

// stubValidator answers without DNS: about one address in ten is UNKNOWN
// (and so refunded), the rest LIKELY. It waits delay per address.
type stubValidator struct{ delay time.Duration }

func unknownAddress(email string) bool { return crc32.ChecksumIEEE([]byte(email))%10 == 0 }

func (v stubValidator) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	if v.delay > 0 {
		time.Sleep(v.delay)
	}
	if unknownAddress(email) {
		return jobs.UnknownResult(email), nil
	}
	r := emailcheck.Result{Email: email, Validations: emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true}}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 80
	return r, nil
}

// TestCrashChild is the worker process of TestCrashProcess; it does nothing
// when run on its own.
func TestCrashChild(t *testing.T) {
	prefix := os.Getenv(envCrashPrefix)
	if prefix == "" {
		t.Skip("helper process of TestCrashProcess")
	}
	delay, _ := time.ParseDuration(os.Getenv(envCrashDelay))
	s, err := redisstore.New(client(t), &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	q, err := jobs.NewQueue(s, credits.New(s, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := jobs.NewPool(q, stubValidator{delay: delay}, &jobs.PoolConfig{
		Workers:        8,
		LeaseDuration:  time.Second,
		RescueInterval: 100 * time.Millisecond,
		PollInterval:   50 * time.Millisecond,
		NewEvent: func(_ context.Context, j jobs.Job, _ emailcheck.Result) (*jobs.Event, error) {
			return &jobs.Event{ID: "msg_job_" + j.ID, Type: webhook.TypeValidationCompleted, Payload: []byte(`{"job_id":"` + j.ID + `"}`)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pool.Run(ctx) }()
	for ctx.Err() == nil {
		n, err := s.Webhooks().Pending(ctx)
		if err == nil && n >= crashJobs {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatal("the batch did not complete in time")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestCrashProcess kills a worker process with SIGKILL in the middle of a
// batch, lets a second process finish it, and checks that every job was
// completed exactly once and that the ledger adds up.
func TestCrashProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	ctx := context.Background()
	s, c, prefix := setup(t, nil)
	a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "crash@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	l := credits.New(s, nil)
	const grant = 700
	if _, err := l.Grant(ctx, a.ID, grant, "top-up"); err != nil {
		t.Fatal(err)
	}
	emails := make([]string, crashJobs)
	unknown := 0
	for i := range emails {
		emails[i] = fmt.Sprintf("user%04d@crash.example.org", i)
		if unknownAddress(emails[i]) {
			unknown++
		}
	}
	q, err := jobs.NewQueue(s, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{Account: a.ID, Emails: emails, IdempotencyKey: "batch-1"})
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	child := func(delay time.Duration) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envCrashPrefix+"="+prefix, envCrashDelay+"="+delay.String())
		out.Reset()
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	outboxLen := func() int64 { return c.ZCard(ctx, "{"+prefix+"}wh:acct:"+a.ID).Val() }

	// The first worker is slowed down so that it is killed mid-batch.
	first := child(4 * time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for outboxLen() < 150 {
		if time.Now().After(deadline) {
			first.Process.Kill()
			first.Wait()
			t.Fatal("the first worker completed nothing")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	first.Wait()
	doneAtKill := outboxLen()
	leased := c.ZCard(ctx, "{"+prefix+"}leases").Val()
	t.Logf("killed the first worker after %d completions, holding %d leases", doneAtKill, leased)
	if doneAtKill >= crashJobs {
		t.Fatal("the first worker finished before it was killed")
	}

	second := child(0)
	if err := second.Wait(); err != nil {
		t.Fatalf("second worker: %v\n%s", err, out.String())
	}

	// Every job completed once: one pending webhook delivery per job,
	// written with its completion.
	ds, err := s.Webhooks().Deliveries(ctx, webhook.ListParams{AccountID: a.ID, Limit: 2 * crashJobs})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]int)
	for _, d := range ds {
		if d.ID != "msg_job_"+d.JobID || d.State != webhook.StatePending {
			t.Fatalf("delivery %s of job %s is %s", d.ID, d.JobID, d.State)
		}
		seen[d.JobID]++
	}
	evs := ds
	if len(evs) != crashJobs || len(seen) != crashJobs {
		t.Fatalf("%d events for %d distinct jobs; want %d each", len(evs), len(seen), crashJobs)
	}
	for i, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("job %s completed %d times", id, seen[id])
		}
		j, err := s.Get(ctx, a.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		wantUnknown := unknownAddress(emails[i])
		if j.State != jobs.StateCompleted || j.Result == nil || (j.Result.Confidence.Status == emailcheck.StatusUnknown) != wantUnknown {
			t.Fatalf("job %s: state %s, result %+v", id, j.State, j.Result)
		}
	}

	// The ledger adds up: 300 + grants − charges + refunds.
	want := int64(store.DefaultSignupCredits + grant - crashJobs + unknown)
	bal, err := l.Balance(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.History(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	refunds := 0
	for _, e := range h {
		sum += e.Delta
		if e.Reason == credits.ReasonRefund {
			refunds++
		}
	}
	if bal != want || sum != want || refunds != unknown {
		t.Fatalf("balance %d, history sum %d, %d refunds; want %d, %d, %d", bal, sum, refunds, want, want, unknown)
	}
	t.Logf("balance %d = %d + %d − %d + %d refunds", bal, store.DefaultSignupCredits, grant, crashJobs, unknown)
}
