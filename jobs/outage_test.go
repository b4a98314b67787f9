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

	"github.com/miekg/dns"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store/memstore"
)

// waitFor waits for cond, checking often, and fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// switchCanary answers unless down is set, counting questions.
type switchCanary struct {
	down  atomic.Bool
	asked atomic.Int64
}

func (c *switchCanary) ask(context.Context) error {
	c.asked.Add(1)
	if c.down.Load() {
		return errors.New("no nameserver answers")
	}
	return nil
}

// unknownResult is what a validator gives for an address whose domain no
// nameserver answered for: syntax checked, score 40, its suggestion.
func unknownResult(email string) emailcheck.Result {
	r := jobs.UnknownResult(email)
	r.Validations.Syntax = true
	r.Confidence.Score = 40
	s := "x@gmail.com"
	r.DidYouMean = &s
	return r
}

func likelyResult(email string) emailcheck.Result {
	r := emailcheck.Result{Email: email, Provider: emailcheck.Provider{Name: "Unknown"}}
	r.Validations.Syntax = true
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	r.Confidence.EquivalentDomains = []string{}
	return r
}

type fixture struct {
	q      *jobs.Queue
	ledger *credits.Ledger
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	b := memstore.NewBackend()
	ledger := credits.New(b.Credits, nil)
	q, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{q: q, ledger: ledger}
}

func (f fixture) submit(t *testing.T, account, source string, emails []string) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := f.ledger.Grant(ctx, account, int64(len(emails)), "top-up"); err != nil {
		t.Fatal(err)
	}
	ids, err := f.q.EnqueueCharged(ctx, jobs.EnqueueChargedParams{AccountID: account, Emails: emails, Source: source})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (f fixture) completed(account string, ids []string) bool {
	for _, id := range ids {
		j, err := f.q.Get(context.Background(), account, id)
		if err != nil || j.State != jobs.StateCompleted {
			return false
		}
	}
	return true
}

// A job whose own domain never answers while the canary does is tried
// UnknownAttempts times, never pauses the pool, and completes with the
// validator's own UNKNOWN result, its source and its refund.
func TestUnansweredDomainRetriedThenFinal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := f.submit(t, "acct", jobs.SourceDashboard, []string{"x@gmial.com"})
	var calls atomic.Int64
	v := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		calls.Add(1)
		return unknownResult(email), fmt.Errorf("%w: gmial.com", emailcheck.ErrResolverUnreachable)
	})
	canary := &switchCanary{}
	var waits []int
	var mu sync.Mutex
	p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
		Workers: 2, PollInterval: 5 * time.Millisecond, Canary: canary.ask, UnknownAttempts: 3,
		UnknownBackoff: func(failures int) time.Duration {
			mu.Lock()
			waits = append(waits, failures)
			mu.Unlock()
			return time.Millisecond
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	waitFor(t, time.Minute, "job completed", func() bool { return f.completed("acct", ids) })
	j, _ := f.q.Get(context.Background(), "acct", ids[0])
	want := unknownResult("x@gmial.com")
	want.Meta.Source = emailcheck.SourceDashboard
	if got, w := string(j.Result.AppendJSON(nil)), string(want.AppendJSON(nil)); got != w {
		t.Fatalf("result\n%s\nwant the validator's\n%s", got, w)
	}
	if calls.Load() != 3 || j.Errors != 2 || p.Outages() != 0 || p.DNSDown() || canary.asked.Load() != 3 {
		t.Fatalf("%d validations, %d errors, %d outages, %d canary questions; want 3, 2, 0, 3", calls.Load(), j.Errors, p.Outages(), canary.asked.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(waits) != "[1 2]" {
		t.Fatalf("backoff asked for %v, want [1 2]", waits)
	}
	if bal, _ := f.ledger.Balance(context.Background(), "acct"); bal != 1 {
		t.Fatalf("balance %d, want 1: the UNKNOWN refunded", bal)
	}
}

// An UNKNOWN whose mail servers' addresses went unlooked-up (their
// lookups may have timed out) is retried like an unanswered domain.
func TestUnresolvedHostsRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := f.submit(t, "acct", "", []string{"x@hosts.example.net"})
	var calls atomic.Int64
	v := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		if calls.Add(1) == 1 {
			r := unknownResult(email)
			r.Validations.DomainExists = true // an MX, its hosts unresolved
			return r, nil
		}
		return likelyResult(email), nil
	})
	canary := &switchCanary{}
	p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
		Workers: 1, PollInterval: 5 * time.Millisecond, Canary: canary.ask,
		UnknownBackoff: func(int) time.Duration { return time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	waitFor(t, time.Minute, "job completed", func() bool { return f.completed("acct", ids) })
	j, _ := f.q.Get(context.Background(), "acct", ids[0])
	if calls.Load() != 2 || j.Errors != 1 || j.Result.Confidence.Status != emailcheck.StatusLikely {
		t.Fatalf("%d validations, %d errors, %s; want LIKELY at the second attempt", calls.Load(), j.Errors, j.Result.Confidence.Status)
	}
}

// An UNKNOWN the validator gives no cause for (no DNS reason, the domain
// not shown to exist) is final at once.
func TestCauselessUnknownIsFinal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := f.submit(t, "acct", "", []string{"x@broken.io"})
	var calls atomic.Int64
	v := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		calls.Add(1)
		return unknownResult(email), nil
	})
	canary := &switchCanary{}
	p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{Workers: 1, PollInterval: 5 * time.Millisecond, Canary: canary.ask})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	waitFor(t, time.Minute, "job completed", func() bool { return f.completed("acct", ids) })
	j, _ := f.q.Get(context.Background(), "acct", ids[0])
	if calls.Load() != 1 || j.Errors != 0 || j.Result.Meta.Source != emailcheck.SourceAPIAsync || !j.Result.Validations.Syntax {
		t.Fatalf("%d validations, %d errors, result %+v; want one, final", calls.Load(), j.Errors, j.Result)
	}
}

// servfailResult is what a validator gives for an address whose domain's
// nameservers answered with a failure (SERVFAIL, REFUSED).
func servfailResult(email string) emailcheck.Result {
	r := unknownResult(email)
	r.Reason = emailcheck.ReasonDNSServfail
	return r
}

// A domain whose nameservers answer with a failure (SERVFAIL: a resolver
// briefly overloaded, or cut off upstream) is tried again like one that
// does not answer, out of the others' way and without pausing the pool:
// when the failure passes the job gets its true verdict, unrefunded; when
// it lasts, the job completes after UnknownAttempts with the validator's
// UNKNOWN, refunded.
func TestServfailRetried(t *testing.T) {
	t.Parallel()
	for _, lasting := range []bool{false, true} {
		t.Run(fmt.Sprintf("lasting %v", lasting), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ids := f.submit(t, "acct", jobs.SourceDashboard, []string{"x@overloaded.example.net"})
			var calls atomic.Int64
			v := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
				if calls.Add(1) < 3 || lasting {
					return servfailResult(email), nil
				}
				return likelyResult(email), nil
			})
			canary := &switchCanary{}
			var mu sync.Mutex
			var waits []int
			p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
				Workers: 1, PollInterval: 5 * time.Millisecond, Canary: canary.ask, UnknownAttempts: 4,
				UnknownBackoff: func(failures int) time.Duration {
					mu.Lock()
					waits = append(waits, failures)
					mu.Unlock()
					return time.Millisecond
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			runPool(t, p)
			waitFor(t, time.Minute, "job completed", func() bool { return f.completed("acct", ids) })
			j, _ := f.q.Get(context.Background(), "acct", ids[0])
			want, wantCalls, wantWaits, wantBal := likelyResult(j.Email), int64(3), "[1 2]", int64(0)
			if lasting {
				want, wantCalls, wantWaits, wantBal = servfailResult(j.Email), 4, "[1 2 3]", 1
			}
			want.Meta.Source = emailcheck.SourceDashboard
			if got, w := string(j.Result.AppendJSON(nil)), string(want.AppendJSON(nil)); got != w {
				t.Fatalf("result\n%s\nwant\n%s", got, w)
			}
			mu.Lock()
			defer mu.Unlock()
			if calls.Load() != wantCalls || j.Errors != int(wantCalls-1) || fmt.Sprint(waits) != wantWaits || p.Outages() != 0 {
				t.Fatalf("%d validations, %d errors, backoff asked for %v, %d outages; want %d, %d, %s, 0",
					calls.Load(), j.Errors, waits, p.Outages(), wantCalls, wantCalls-1, wantWaits)
			}
			if bal, _ := f.ledger.Balance(context.Background(), "acct"); bal != wantBal {
				t.Fatalf("balance %d, want %d", bal, wantBal)
			}
		})
	}
}

// A job whose leases were rescued (its workers died) still has every
// attempt of its own when its domain then goes unanswered: the rescues
// and the unanswered lookups are budgets apart.
func TestRescuesLeaveUnansweredAttempts(t *testing.T) {
	t.Parallel()
	b := memstore.NewBackend()
	ledger := credits.New(b.Credits, nil)
	q, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{q: q, ledger: ledger}
	ids := f.submit(t, "acct", "", []string{"x@flaky.example.net"})
	ctx := context.Background()
	for range 2 { // two workers lease the job and die
		ls, err := b.Jobs.Lease(ctx, jobsdriver.LeaseParams{Max: 1, Duration: time.Millisecond})
		if err != nil || len(ls) != 1 {
			t.Fatalf("lease: %v, %v", ls, err)
		}
		waitFor(t, time.Minute, "the lease rescued", func() bool {
			n, err := q.RescueExpired(ctx)
			return err == nil && n == 1
		})
	}
	var calls atomic.Int64
	v := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		if calls.Add(1) < 3 {
			return unknownResult(email), emailcheck.ErrResolverUnreachable
		}
		return likelyResult(email), nil
	})
	p, err := jobs.NewPool(q, v, &jobs.PoolConfig{
		Workers: 1, PollInterval: 5 * time.Millisecond, Canary: (&switchCanary{}).ask,
		UnknownBackoff: func(int) time.Duration { return time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	waitFor(t, time.Minute, "job completed", func() bool { return f.completed("acct", ids) })
	j, _ := q.Get(ctx, "acct", ids[0])
	if j.Result.Confidence.Status != emailcheck.StatusLikely || calls.Load() != 3 || j.Errors != 4 {
		t.Fatalf("%s after %d validations and %d failed attempts; want LIKELY at the third validation, after 2 rescues and 2 unanswered attempts",
			j.Result.Confidence.Status, calls.Load(), j.Errors)
	}
}

// While the canary is silent, unjudged jobs go back to the queue without
// counting an attempt, the pool pauses, and it resumes when the canary
// answers: every job then completes with its true verdict, unrefunded.
func TestOutagePutsJobsBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = 40
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("u%d@d%d.example.net", i, i)
	}
	ids := f.submit(t, "acct", "", emails)
	canary := &switchCanary{}
	var dnsDown atomic.Bool
	var validated atomic.Int64
	v := validatorFunc(func(_ context.Context, email string) (emailcheck.Result, error) {
		validated.Add(1)
		if dnsDown.Load() {
			return unknownResult(email), emailcheck.ErrResolverUnreachable
		}
		return likelyResult(email), nil
	})
	var done atomic.Int64
	p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
		Workers: 4, PollInterval: 5 * time.Millisecond, Canary: canary.ask, OutagePause: 20 * time.Millisecond,
		UnknownBackoff: func(int) time.Duration { return time.Hour }, // a counted attempt would stall the test
		OnComplete:     func(context.Context, jobs.Job) { done.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// The outage begins before the first job.
	dnsDown.Store(true)
	canary.down.Store(true)
	runPool(t, p)
	waitFor(t, time.Minute, "pool paused", p.DNSDown)
	atPause := validated.Load()
	waitFor(t, time.Minute, "canary asked while paused", func() bool { return canary.asked.Load() > atPause+3 })
	if done.Load() != 0 {
		t.Fatalf("%d jobs completed during the outage", done.Load())
	}
	dnsDown.Store(false)
	canary.down.Store(false)
	waitFor(t, time.Minute, "every job completed", func() bool { return f.completed("acct", ids) })
	for _, id := range ids {
		j, _ := f.q.Get(context.Background(), "acct", id)
		if j.Result.Confidence.Status != emailcheck.StatusLikely || j.Errors != 0 {
			t.Errorf("job %s: %s after %d errors; want LIKELY, none counted", id, j.Result.Confidence.Status, j.Errors)
		}
	}
	if bal, _ := f.ledger.Balance(context.Background(), "acct"); bal != 0 || p.Outages() != 1 || p.DNSDown() {
		t.Fatalf("balance %d, %d outages, down %v; want 0, 1, false", bal, p.Outages(), p.DNSDown())
	}
}

// Jobs at domains that never answer hold up no one: while their
// validations hang, every other account's job completes. The hung jobs go
// aside (they hold no worker, nor count among the leases the pool
// refills), and once the slow lane is full the account's further jobs
// wait in the queue. Whether the 50 addresses share one domain or have
// one each makes no difference.
func TestHungDomainsHoldUpNoOne(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared domain %v", shared), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			deadEmails := make([]string, 50)
			for i := range deadEmails {
				deadEmails[i] = fmt.Sprintf("u%d@dead.example.net", i)
				if !shared {
					deadEmails[i] = fmt.Sprintf("u%d@d%d.dead.example.net", i, i)
				}
			}
			aIDs := f.submit(t, "a", "", deadEmails)
			bEmails := make([]string, 1000)
			for i := range bEmails {
				bEmails[i] = fmt.Sprintf("u%d@live.example.net", i)
			}
			bIDs := f.submit(t, "b", "", bEmails)

			release := make(chan struct{})
			var hung atomic.Int64
			v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
				if strings.HasSuffix(email, "dead.example.net") {
					hung.Add(1)
					<-release
					return unknownResult(email), emailcheck.ErrResolverUnreachable
				}
				return likelyResult(email), nil
			})
			canary := &switchCanary{}
			p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
				Workers: 4, PollInterval: 5 * time.Millisecond, Canary: canary.ask,
				SlowAfter: 10 * time.Millisecond, MaxSlow: 20,
				UnknownBackoff: func(int) time.Duration { return time.Millisecond },
			})
			if err != nil {
				t.Fatal(err)
			}
			runPool(t, p)
			// B's jobs all complete while every validation of A's hangs.
			waitFor(t, 2*time.Minute, "B's jobs completed", func() bool { return f.completed("b", bIDs) })
			if n := hung.Load(); n > 20+4 {
				t.Fatalf("%d of A's validations hang at once; want at most the slow lane's 20 and the 4 workers", n)
			}
			close(release)
			waitFor(t, 2*time.Minute, "A's jobs completed", func() bool { return f.completed("a", aIDs) })
			for _, id := range aIDs {
				j, _ := f.q.Get(context.Background(), "a", id)
				if j.Result.Confidence.Status != emailcheck.StatusUnknown || j.Errors != jobs.DefaultUnknownAttempts-1 {
					t.Fatalf("A job %s: %s after %d errors", id, j.Result.Confidence.Status, j.Errors)
				}
			}
			if p.Outages() != 0 {
				t.Fatalf("%d outages; a domain of its own never pauses the pool", p.Outages())
			}
		})
	}
}

// A DNS outage in the middle of a batch, over a real DNS server, delays
// its results instead of spoiling them: after the DNS comes back every
// job completes with its real status, once, and nothing is refunded.
func TestDNSOutageMidBatch(t *testing.T) {
	t.Parallel()
	const n = 1000
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		if strings.HasSuffix(name, ".outage.io") && strings.HasPrefix(name, "d") {
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.sharedhost.net"}}}, true
		}
		return dnstest.Domain{}, false
	}})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, QueryTimeout: 100 * time.Millisecond, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	f := newFixture(t)
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%d@d%d.outage.io", i, i)
	}
	ids := f.submit(t, "acct", "", emails)

	var mu sync.Mutex
	seen := map[string]int{}
	var done atomic.Int32
	pool, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
		Workers:     8,
		Canary:      v.PingNameservers,
		OutagePause: 200 * time.Millisecond,
		// Past the validator's failure cache (5 s), so that a domain
		// whose failure was cached during the outage is asked again.
		UnknownBackoff: func(int) time.Duration { return 6 * time.Second },
		OnComplete: func(_ context.Context, j jobs.Job) {
			mu.Lock()
			seen[j.ID]++
			mu.Unlock()
			done.Add(1)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, pool)

	waitFor(t, time.Minute, "200 jobs", func() bool { return done.Load() >= 200 })
	srv.SetLatency(time.Hour) // no query is answered any more
	atDown := done.Load()
	waitFor(t, time.Minute, "pool paused", pool.DNSDown)
	srv.SetLatency(0)
	waitFor(t, 2*time.Minute, "every job completed", func() bool { return f.completed("acct", ids) })
	t.Logf("DNS down after %d jobs; %d outage(s)", atDown, pool.Outages())

	for _, id := range ids {
		j, err := f.q.Get(context.Background(), "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Result.Confidence.Status != emailcheck.StatusLikely {
			t.Errorf("job %s: %s, want LIKELY", id, j.Result.Confidence.Status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %s completed %d times", id, c)
		}
	}
	if bal, _ := f.ledger.Balance(context.Background(), "acct"); bal != 0 {
		t.Fatalf("balance %d, want 0: nothing refunded", bal)
	}
}

// A validation that takes longer than the outcome's bookkeeping is
// allowed (10 s) still has its outcome recorded: the retry is not sent
// with a context that expired while the lookups ran.
func TestLongValidationRecordsItsRetry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := f.submit(t, "acct", "", []string{"x@slow.example.net"})
	v := validatorFunc(func(ctx context.Context, email string) (emailcheck.Result, error) {
		time.Sleep(11 * time.Second)
		return unknownResult(email), emailcheck.ErrResolverUnreachable
	})
	canary := &switchCanary{}
	p, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{
		Workers: 1, PollInterval: 5 * time.Millisecond, Canary: canary.ask,
		LeaseDuration:  time.Hour, // no rescue can record the failure instead
		UnknownBackoff: func(int) time.Duration { return time.Hour },
	})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	var j jobs.Job
	waitFor(t, 2*time.Minute, "the retry recorded", func() bool {
		j, _ = f.q.Get(context.Background(), "acct", ids[0])
		return j.Errors == 1
	})
	if j.LastError != "no nameserver answered for the domain (unjudged attempt 1 of 3)" || j.State != jobs.StateActive {
		t.Fatalf("job %+v; want waiting for its second attempt", j)
	}
}

// The canary does not ask about the zones of the addresses submitted: an
// attacker's zones whose servers answer their MX but SERVFAIL any other
// name, then a job at a SERVFAILing domain, do not make the canary fail
// and pause the pool, and another account's live jobs complete.
func TestCanaryIgnoresSubmittedZones(t *testing.T) {
	srv := dnstest.Start(t, nil, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
		switch {
		case strings.HasPrefix(name, "att") && strings.HasSuffix(name, ".io"):
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx." + name}}}, true
		case strings.HasPrefix(name, "mx.att"):
			return dnstest.Domain{A: []string{"93.184.216.34"}}, true
		case strings.Contains(name, ".att"), name == "sf.io":
			return dnstest.Domain{Rcode: dns.RcodeServerFailure}, true
		case strings.HasSuffix(name, ".io"):
			return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.sharedhost.net"}}}, true
		}
		return dnstest.Domain{}, false
	}})
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	f := newFixture(t)
	var asked atomic.Int32
	canary := func(ctx context.Context) error {
		err := v.PingNameservers(ctx)
		asked.Add(1)
		return err
	}
	pool, err := jobs.NewPool(f.q, v, &jobs.PoolConfig{Workers: 4, Canary: canary, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runPool(t, pool)
	for _, d := range []string{"att1.io", "att2.io", "att3.io"} {
		if r, _ := v.Validate(context.Background(), "a@"+d); r.Confidence.Status != emailcheck.StatusLikely {
			t.Fatalf("%s: %s", d, r.Confidence.Status)
		}
	}
	f.submit(t, "attacker", "", []string{"a@sf.io"})
	// The SERVFAIL job's validation came back and the canary was asked.
	waitFor(t, time.Minute, "the canary asked", func() bool { return asked.Load() > 0 })
	emails := make([]string, 50)
	for i := range emails {
		emails[i] = fmt.Sprintf("u%d@v%d.io", i, i)
	}
	ids := f.submit(t, "victim", "", emails)
	waitFor(t, time.Minute, "the victim's jobs", func() bool { return f.completed("victim", ids) || pool.DNSDown() })
	if pool.DNSDown() || pool.Outages() > 0 {
		t.Errorf("pool paused (DNSDown %v, %d outages) by a domain's SERVFAIL and the zones submitted", pool.DNSDown(), pool.Outages())
	}
}
