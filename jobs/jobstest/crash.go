package jobstest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store/crashtest"
	"github.com/validmail/validmail/webhook"
)

// Variables through which [RunCrash] configures its child processes.
const (
	// EnvCrashNamespace holds the namespace the child works in; a test
	// process without it is not a crash child.
	EnvCrashNamespace = "VALIDMAIL_CRASH_NAMESPACE"
	// envCrashDelay holds how long the child's validator takes per
	// address.
	envCrashDelay = "VALIDMAIL_CRASH_DELAY"
	// envCrashMode, set to crashModeGroups, makes the child write the
	// batch's completions in groups rather than run a pool.
	envCrashMode    = "VALIDMAIL_CRASH_MODE"
	crashModeGroups = "groups"
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
	// crashGroupSize is how many completions the grouped child writes in
	// one call, and crashKillGroup the group it is killed writing.
	crashGroupSize = 200
	crashKillGroup = 3
	// crashKillDelay is how long after the call that writes the group
	// crashKillGroup the grouped child kills itself.
	crashKillDelay = 500 * time.Microsecond
)

// crashGroupMarker is what the grouped child writes just before it
// hands group i to the driver.
func crashGroupMarker(i int) string { return fmt.Sprintf("writing completion group %d\n", i) }

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
func RunCrash(t *testing.T, d crashtest.Durable[Backend]) {
	ns, b := crashtest.Begin(t, d, EnvCrashNamespace)
	c := newCrashBatch(t, b)

	// The first worker is slowed down so that it is killed mid-batch.
	child := crashtest.Start(t, d.ChildTest, EnvCrashNamespace+"="+ns, envCrashDelay+"="+crashSlow.String())
	deadline := time.Now().Add(30 * time.Second)
	for c.completed(t) < crashKillAt {
		if time.Now().After(deadline) {
			child.Kill()
			t.Fatalf("the first worker completed too few jobs in 30s\n%s", child.Output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	child.Kill()
	atKill := c.completed(t)
	t.Logf("killed the first worker (SIGKILL) after %d of %d jobs completed", atKill, crashJobs)
	if atKill >= crashJobs {
		t.Fatal("the first worker finished before it was killed")
	}
	c.finish(t, d, ns)
}

// RunCrashCompleting checks that a worker killed while a group of
// completions is being written ([jobsdriver.BatchCompleter]) leaves no job
// completed twice and none lost. A child process leases the whole batch
// of [RunCrash] and writes its completions in groups of 200; half a
// millisecond into the call that writes the fourth group, it sends itself
// SIGKILL, so that it dies while the backend is receiving or writing the
// group (a group takes milliseconds). A second child finishes the batch
// with a [jobs.Pool], after the killed worker's leases expire; the
// checks are those of [RunCrash].
//
// It is skipped for a driver that is not a [jobsdriver.BatchCompleter].
func RunCrashCompleting(t *testing.T, d crashtest.Durable[Backend]) {
	ns, b := crashtest.Begin(t, d, EnvCrashNamespace)
	be := b.check(t)
	if _, ok := be.Driver.(jobsdriver.BatchCompleter); !ok {
		t.Skip("driver does not implement jobsdriver.BatchCompleter")
	}
	c := newCrashBatch(t, b)
	child := crashtest.Start(t, d.ChildTest, EnvCrashNamespace+"="+ns, envCrashMode+"="+crashModeGroups)
	if err := child.Wait(30 * time.Second); err == nil || !strings.Contains(child.Output(), crashGroupMarker(crashKillGroup)) {
		t.Fatalf("the child was not killed writing group %d: %v\n%s", crashKillGroup, err, child.Output())
	}
	after := c.completed(t)
	written := after - crashKillGroup*crashGroupSize
	t.Logf("the worker was killed (SIGKILL) %v into writing group %d: %d completions in all, %d of the group's %d",
		crashKillDelay, crashKillGroup, after, written, crashGroupSize)
	if after < crashKillGroup*crashGroupSize || after > (crashKillGroup+1)*crashGroupSize {
		t.Fatalf("%d completions after the kill; want the %d of the groups written before it, and at most the group being written",
			after, crashKillGroup*crashGroupSize)
	}
	c.finish(t, d, ns)
}

// crashBatch is the charged batch of a crash test, enqueued before any
// child starts.
type crashBatch struct {
	be      Backend
	ledger  *credits.Ledger
	emails  []string
	ids     []string
	unknown int // how many of emails the validator answers UNKNOWN
}

// newCrashBatch grants the crash account its credits and enqueues the
// batch of [crashJobs] charged jobs.
func newCrashBatch(t *testing.T, b Backend) *crashBatch {
	be := b.check(t)
	ctx := context.Background()
	c := &crashBatch{be: be, ledger: credits.New(be.Credits, nil), emails: make([]string, crashJobs)}
	for _, g := range []struct {
		n      int64
		reason string
	}{{crashSignup, "signup"}, {crashTopUp, "top-up"}} {
		if _, err := c.ledger.Grant(ctx, crashAccount, g.n, g.reason); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.emails {
		c.emails[i] = crashEmail(i)
		if crashUnknown(c.emails[i]) {
			c.unknown++
		}
	}
	q, err := jobs.NewQueue(be.Driver, c.ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.ids, err = q.EnqueueCharged(ctx, jobtype.EnqueueChargedParams{AccountID: crashAccount, Emails: c.emails, IdempotencyKey: "crash-batch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ids) != crashJobs {
		t.Fatalf("EnqueueCharged returned %d ids, want %d", len(c.ids), crashJobs)
	}
	return c
}

// completed returns how many of the batch's jobs have completed, counted
// by their events.
func (c *crashBatch) completed(t *testing.T) int {
	evs, err := c.be.Events(context.Background(), crashAccount)
	if err != nil {
		t.Fatal(err)
	}
	return len(jobEvents(evs))
}

// finish starts a second worker over namespace ns, waits for it to
// finish the batch and checks the outcome: every job completed exactly
// once with its result, one event per job and one for the batch, and a
// balance of exactly the grants minus the charges plus one refund per
// UNKNOWN result.
func (c *crashBatch) finish(t *testing.T, d crashtest.Durable[Backend], ns string) {
	ctx := context.Background()
	be := &c.be
	child := crashtest.Start(t, d.ChildTest, EnvCrashNamespace+"="+ns, envCrashDelay+"=0s")
	if err := child.Wait(90 * time.Second); err != nil {
		t.Fatalf("second worker: %v\n%s", err, child.Output())
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
	if bd, ok := be.Driver.(jobsdriver.BatchDriver); ok {
		var bevs []webhook.Event
		for _, e := range all {
			if e.Type == batchEventType {
				bevs = append(bevs, e)
			}
		}
		if len(bevs) != 1 {
			t.Fatalf("%d batch events, want exactly 1", len(bevs))
		}
		b, err := bd.Batch(ctx, crashAccount, c.ids[0])
		if err != nil {
			t.Fatal(err)
		}
		e := bevs[0]
		if want := webhook.BatchCompletedPayload(e.CreatedAt, jobsdriver.BatchCompleted(b)); string(e.Payload) != string(want) {
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
	for i, id := range c.ids {
		if seen[id] != 1 {
			t.Fatalf("job %s has %d events, want 1", id, seen[id])
		}
		j, err := be.Driver.Get(ctx, crashAccount, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		wantUnknown := crashUnknown(c.emails[i])
		if j.State != jobtype.StateCompleted || j.Result == nil || j.Email != c.emails[i] || j.Cost != 1 ||
			(j.Result.Confidence.Status == emailcheck.StatusUnknown) != wantUnknown {
			t.Fatalf("job %s: state %s, email %s, cost %d, result %+v", id, j.State, j.Email, j.Cost, j.Result)
		}
		if j.Errors > 0 {
			rescued++
		}
	}
	t.Logf("all %d jobs completed once; %d were leased by the killed worker and rescued", crashJobs, rescued)

	// The ledger adds up: grants − charges + refunds.
	want := int64(crashSignup + crashTopUp - crashJobs + c.unknown)
	bal, err := c.ledger.Balance(ctx, crashAccount)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := c.ledger.History(ctx, crashAccount)
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
	if bal != want || sum != want || refunds != c.unknown {
		t.Fatalf("balance %d, history sum %d, %d refunds; want %d, %d, %d", bal, sum, refunds, want, want, c.unknown)
	}
	t.Logf("balance %d = %d + %d − %d + %d refunds", bal, crashSignup, crashTopUp, crashJobs, c.unknown)
}

// CrashChild is the worker process of [RunCrash]: the test named by
// b.ChildTest calls it. It runs a [jobs.Pool] over the namespace given by
// the parent until every job of the batch has completed. Without
// [EnvCrashNamespace] (a test run of its own) it skips.
func CrashChild(t *testing.T, d crashtest.Durable[Backend]) {
	_, sb := crashtest.InChild(t, d, EnvCrashNamespace)
	be := sb.check(t)
	if os.Getenv(envCrashMode) == crashModeGroups {
		completeInGroups(t, be)
		return
	}
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
		NewEvents: func(_ context.Context, j jobtype.Job, _ emailcheck.Result) (ev, batch *webhook.Event, err error) {
			return &webhook.Event{ID: "evt_" + j.ID, Type: crashEventType, Payload: []byte(crashPayload(j.ID))}, newBatchEvent(j), nil
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

// completeInGroups is the grouped child of [RunCrashCompleting]: it
// leases the whole batch and writes its completions, with their refunds
// and events, in groups of crashGroupSize through the driver's
// CompleteMany, announcing each group on stdout before the call, and
// kills itself with SIGKILL crashKillDelay into the call that writes
// group crashKillGroup.
func completeInGroups(t *testing.T, be Backend) {
	ctx := context.Background()
	bc := be.Driver.(jobsdriver.BatchCompleter)
	var leases []jobsdriver.Lease
	for len(leases) < crashJobs {
		ls, err := be.Driver.Lease(ctx, jobsdriver.LeaseParams{Max: crashJobs - len(leases), Duration: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			t.Fatalf("leased %d jobs, want %d", len(leases), crashJobs)
		}
		leases = append(leases, ls...)
	}
	v := crashValidator{}
	for g := 0; g*crashGroupSize < len(leases); g++ {
		group := leases[g*crashGroupSize : min((g+1)*crashGroupSize, len(leases))]
		ps := make([]jobsdriver.CompleteParams, 0, len(group))
		for _, l := range group {
			r, _ := v.Validate(ctx, l.Email)
			p := jobsdriver.CompleteParams{
				ID: l.ID, Token: l.Token, Result: r,
				Event: &webhook.Event{ID: "evt_" + l.ID, Type: crashEventType, Payload: []byte(crashPayload(l.ID))},
			}
			p.BatchEvent = newBatchEvent(l.Job)
			if r.Confidence.Status == emailcheck.StatusUnknown {
				p.Refund = l.Cost
			}
			ps = append(ps, p)
		}
		os.Stdout.WriteString(crashGroupMarker(g))
		if g == crashKillGroup {
			time.AfterFunc(crashKillDelay, func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) })
		}
		for i, err := range bc.CompleteMany(ctx, ps) {
			if err != nil {
				t.Fatalf("completing job %s: %v", ps[i].ID, err)
			}
		}
	}
	time.Sleep(time.Minute)
}

// jobEvents returns the job events among evs.
func jobEvents(evs []webhook.Event) []webhook.Event {
	out := make([]webhook.Event, 0, len(evs))
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
