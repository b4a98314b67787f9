package jobstest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/storetest/crashtest"
)

// Variables through which [RunCrash] configures its child processes.
const (
	// EnvCrashNamespace holds the namespace the child works in; a test
	// process without it is not a crash child.
	EnvCrashNamespace = "VALIDMAIL_CRASH_NAMESPACE"
	// envCrashDelay holds how long the child's validator takes per
	// address.
	envCrashDelay = "VALIDMAIL_CRASH_DELAY"
)

// Shape of the crash batch.
const (
	crashJobs    = 1000
	crashAccount = "acct-crash"
	// crashSignup and crashTopUp are the account's grants: a signup
	// allowance and a top-up, together enough for the batch.
	crashSignup = 300
	crashTopUp  = 800
	// crashKillAt is how many completions the first worker makes before
	// it is killed.
	crashKillAt = 150
	// crashSlow is the first worker's validation time per address; it
	// keeps that worker busy long enough to be killed mid-batch.
	crashSlow = 4 * time.Millisecond
)

// RunCrash checks that a batch survives the death of a worker process.
// It enqueues a charged batch of 1,000 jobs in a fresh namespace, starts
// a child process (the test binary, running d.ChildTest) whose
// [jobs.Pool] works the batch, kills it with SIGKILL after some 150
// completions, and starts a second child that finishes the batch. It
// then checks that every job completed exactly once, with its result,
// that the outbox holds exactly one event per job, and that the balance
// is exactly the grants minus the charges plus one refund per UNKNOWN
// result. The validator is deterministic and needs no network; one
// address in ten comes back UNKNOWN.
//
// RunCrash is skipped under -short and inside a child process.
func RunCrash(t *testing.T, d crashtest.Durable) {
	ns, sb := crashtest.Begin(t, d, EnvCrashNamespace)
	be := fromStore(t, sb)
	ctx := context.Background()
	ledger := credits.New(be.Credits, nil)
	for _, g := range []struct {
		n      int64
		reason string
	}{{crashSignup, "signup"}, {crashTopUp, "top-up"}} {
		if _, err := ledger.Grant(ctx, crashAccount, g.n, g.reason); err != nil {
			t.Fatal(err)
		}
	}
	emails := make([]string, crashJobs)
	unknown := 0
	for i := range emails {
		emails[i] = crashEmail(i)
		if crashUnknown(emails[i]) {
			unknown++
		}
	}
	q, err := jobs.NewQueue(be.Driver, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{AccountID: crashAccount, Emails: emails, IdempotencyKey: "crash-batch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != crashJobs {
		t.Fatalf("EnqueueCharged returned %d ids, want %d", len(ids), crashJobs)
	}
	completed := func() int {
		evs, err := be.Events(ctx, crashAccount)
		if err != nil {
			t.Fatal(err)
		}
		return len(jobEvents(evs))
	}

	// The first worker is slowed down so that it is killed mid-batch.
	c := crashtest.Start(t, d.ChildTest, EnvCrashNamespace+"="+ns, envCrashDelay+"="+crashSlow.String())
	deadline := time.Now().Add(30 * time.Second)
	for completed() < crashKillAt {
		if time.Now().After(deadline) {
			c.Kill()
			t.Fatalf("the first worker completed too few jobs in 30s\n%s", c.Output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Kill()
	atKill := completed()
	t.Logf("killed the first worker (SIGKILL) after %d of %d jobs completed", atKill, crashJobs)
	if atKill >= crashJobs {
		t.Fatal("the first worker finished before it was killed")
	}

	c = crashtest.Start(t, d.ChildTest, EnvCrashNamespace+"="+ns, envCrashDelay+"=0s")
	if err := c.Wait(90 * time.Second); err != nil {
		t.Fatalf("second worker: %v\n%s", err, c.Output())
	}

	// Every job completed once: one event per job, written with its
	// completion, and a result that matches the validator's.
	all, err := be.Events(ctx, crashAccount)
	if err != nil {
		t.Fatal(err)
	}
	evs := jobEvents(all)
	// And the batch's event, once, though both workers asked for it with
	// every completion.
	if bd, ok := be.Driver.(jobs.BatchDriver); ok {
		var bevs []jobs.Event
		for _, e := range all {
			if e.Type == batchEventType {
				bevs = append(bevs, e)
			}
		}
		if len(bevs) != 1 {
			t.Fatalf("%d batch events, want exactly 1", len(bevs))
		}
		b, err := bd.Batch(ctx, crashAccount, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		e := bevs[0]
		if want := jobs.BatchEventPayload(jobs.BatchEvent{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt}, b); string(e.Payload) != string(want) {
			t.Fatalf("batch event payload\n got %s\nwant %s", e.Payload, want)
		}
		t.Logf("one batch event: %s", e.Payload)
	}
	seen := make(map[string]int, crashJobs)
	for _, ev := range evs {
		id := strings.TrimPrefix(ev.ID, "evt_")
		if ev.ID != "evt_"+id || ev.Type != crashEventType || string(ev.Payload) != crashPayload(id) {
			t.Errorf("event %s: type %q, payload %s; want a %s event naming its job", ev.ID, ev.Type, ev.Payload, crashEventType)
		}
		seen[id]++
	}
	if len(evs) != crashJobs || len(seen) != crashJobs {
		t.Fatalf("%d events for %d distinct jobs; want %d of each", len(evs), len(seen), crashJobs)
	}
	rescued := 0
	for i, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("job %s has %d events, want 1", id, seen[id])
		}
		j, err := be.Driver.Get(ctx, crashAccount, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		wantUnknown := crashUnknown(emails[i])
		if j.State != jobs.StateCompleted || j.Result == nil || j.Email != emails[i] || j.Cost != 1 ||
			(j.Result.Confidence.Status == emailcheck.StatusUnknown) != wantUnknown {
			t.Fatalf("job %s: state %s, email %s, cost %d, result %+v", id, j.State, j.Email, j.Cost, j.Result)
		}
		if j.Errors > 0 {
			rescued++
		}
	}
	t.Logf("all %d jobs completed once; %d were leased by the killed worker and rescued", crashJobs, rescued)

	// The ledger adds up: grants − charges + refunds.
	want := int64(crashSignup + crashTopUp - crashJobs + unknown)
	bal, err := ledger.Balance(ctx, crashAccount)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := ledger.History(ctx, crashAccount)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	refunds := 0
	for _, e := range hist {
		sum += e.Delta
		if e.Reason == credits.ReasonRefund {
			refunds++
		}
	}
	if bal != want || sum != want || refunds != unknown {
		t.Fatalf("balance %d, history sum %d, %d refunds; want %d, %d, %d", bal, sum, refunds, want, want, unknown)
	}
	t.Logf("balance %d = %d + %d − %d + %d refunds", bal, crashSignup, crashTopUp, crashJobs, unknown)
}

// CrashChild is the worker process of [RunCrash]: the test named by
// b.ChildTest calls it. It runs a [jobs.Pool] over the namespace given by
// the parent until every job of the batch has completed. Without
// [EnvCrashNamespace] (a test run of its own) it skips.
func CrashChild(t *testing.T, d crashtest.Durable) {
	_, sb := crashtest.InChild(t, d, EnvCrashNamespace)
	be := fromStore(t, sb)
	delay, err := time.ParseDuration(os.Getenv(envCrashDelay))
	if err != nil {
		t.Fatalf("%s: %v", envCrashDelay, err)
	}
	q, err := jobs.NewQueue(be.Driver, credits.New(be.Credits, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := jobs.NewPool(q, crashValidator{delay: delay}, &jobs.PoolConfig{
		Workers:        8,
		LeaseDuration:  time.Second,
		RescueInterval: 100 * time.Millisecond,
		PollInterval:   50 * time.Millisecond,
		NewEvent: func(_ context.Context, j jobs.Job, _ emailcheck.Result) (*jobs.Event, error) {
			return &jobs.Event{ID: "evt_" + j.ID, Type: crashEventType, Payload: []byte(crashPayload(j.ID))}, nil
		},
		NewBatchEvent: newBatchEvent,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pool.Run(ctx) }()
	for ctx.Err() == nil {
		evs, err := be.Events(ctx, crashAccount)
		if err == nil && len(jobEvents(evs)) >= crashJobs {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatal("the batch did not complete in 60s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// jobEvents returns the job events among evs.
func jobEvents(evs []jobs.Event) []jobs.Event {
	out := make([]jobs.Event, 0, len(evs))
	for _, e := range evs {
		if e.Type == crashEventType {
			out = append(out, e)
		}
	}
	return out
}

// crashEventType is the type of the events the crash workers write.
const crashEventType = "validation.completed"

func crashPayload(jobID string) string { return `{"job_id":"` + jobID + `"}` }

// crashEmail is the address of job i.
func crashEmail(i int) string { return fmt.Sprintf("user%04d@crash.example.org", i) }

// crashUnknown reports whether the crash validator answers UNKNOWN for
// email: one address in ten.
func crashUnknown(email string) bool {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(email, "user"), "@crash.example.org"))
	return err == nil && n%10 == 3
}

// crashValidator answers deterministically without DNS, taking delay
// per address.
type crashValidator struct{ delay time.Duration }

func (v crashValidator) Validate(ctx context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	if v.delay > 0 {
		time.Sleep(v.delay)
	}
	if crashUnknown(email) {
		return jobs.UnknownResult(email), nil
	}
	r := emailcheck.Result{Email: email, Validations: emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true}}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	return r, nil
}
