package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/webhook"
)

// Validator validates one address: the one interface of a validator for
// every part that validates, the worker [Pool], the API (httpapi), the
// console's demo and the service. *emailcheck.Validator satisfies it. It
// must be safe for concurrent use; an error means the validation could not
// be done (a job is retried, a request answered 503 or 500), never that
// the address is bad.
type Validator interface {
	Validate(ctx context.Context, email string, opts ...emailcheck.CallOption) (emailcheck.Result, error)
}

// UnknownValidator is implemented by a [Validator] that can tell, without
// asking the DNS, the result it gives an address when the DNS gives no
// verdict on its domain: *emailcheck.Validator's Unknown. A job whose
// attempts run out without such a result of the validator's own (every
// attempt failed, or an unanswered lookup came without a result)
// completes with it, so that its result is the one a single validation
// gives in the same situation. With a validator that does not implement
// it, such a job completes with [UnknownResult].
type UnknownValidator interface {
	Unknown(email string, reason emailcheck.Reason, opts ...emailcheck.CallOption) emailcheck.Result
}

// NameserverPinger is implemented by a [Validator] that can tell whether
// its DNS resolver answers at all: *emailcheck.Validator's
// PingNameservers, which is a [Canary]. The service uses it as the pool's
// default canary, in its readiness check and at start-up.
type NameserverPinger interface {
	PingNameservers(ctx context.Context) error
}

// Pool defaults.
const (
	DefaultWorkers       = 8
	DefaultLeaseDuration = 30 * time.Second
	DefaultPollInterval  = time.Second
	DefaultMaxAttempts   = 5
	DefaultJobTimeout    = time.Minute
	DefaultCleanupEvery  = time.Hour
	DefaultSlowAfter     = 500 * time.Millisecond
)

// PoolConfig configures a [Pool]. The zero value gives the defaults.
type PoolConfig struct {
	// Workers is the number of jobs validated at once. Default
	// [DefaultWorkers].
	Workers int
	// LeaseDuration is the length of a lease; leases are renewed every
	// HeartbeatInterval while their job runs. Default
	// [DefaultLeaseDuration].
	LeaseDuration time.Duration
	// HeartbeatInterval is how often held leases are renewed. Default a
	// third of LeaseDuration.
	HeartbeatInterval time.Duration
	// PollInterval is how often an idle pool looks for jobs when no
	// notification wakes it first. Default [DefaultPollInterval].
	PollInterval time.Duration
	// RescueInterval is how often expired leases (of workers that died)
	// are rescued. Default half of LeaseDuration.
	RescueInterval time.Duration
	// CleanupInterval is how often completed jobs past the queue's
	// retention are removed. Default [DefaultCleanupEvery]; negative
	// disables cleanup.
	CleanupInterval time.Duration
	// MaxAttempts bounds a job's attempts when its validation fails: a
	// validation error with MaxAttempts-1 failed attempts of any kind
	// already counted ([Job.Errors]) is the last, and the job completes
	// with the validator's UNKNOWN for the address ([UnknownValidator])
	// and its cost is refunded. Default [DefaultMaxAttempts].
	MaxAttempts int
	// Backoff returns the wait before attempt number failures+1, given
	// the number of failures so far (1 or more). Default: 1 s doubling per
	// failure, at most 5 minutes, with up to 10% jitter.
	Backoff func(failures int) time.Duration
	// JobTimeout bounds one validation. Default [DefaultJobTimeout].
	JobTimeout time.Duration
	// Canary tells whether the DNS answers at all; httpapi/service sets
	// the validator's PingNameservers. When a validation comes back
	// UNKNOWN the pool asks it a fresh question. If it answers, the
	// verdict is the address's own: a job whose domain no nameserver
	// answered for ([emailcheck.ErrResolverUnreachable],
	// [emailcheck.ReasonDNSTimeout]), whose nameservers answered with a
	// failure ([emailcheck.ReasonDNSServfail]: SERVFAIL, REFUSED, as from
	// a resolver briefly overloaded or cut off from the domain's
	// servers), or whose mail servers' addresses could not be looked up,
	// is tried again later, up to UnknownAttempts times, and then
	// completes with the validator's UNKNOWN result. An UNKNOWN with no
	// such cause is final at once.
	// If the canary does not answer, the DNS is down: the job goes back
	// to the queue without counting an attempt, and the pool leases
	// nothing until the canary answers again (asked after 100 ms, then
	// twice as long each time up to OutagePause). Nil: the DNS is never
	// considered down.
	Canary Canary
	// UnknownAttempts bounds the attempts in a row at a job that came
	// back without a DNS verdict while the canary answered (see Canary).
	// It is a budget of its own: the job's rescued leases and failed
	// validations do not use it up, though one of them between two such
	// attempts starts the count again; a job's failed attempts of every
	// kind together stay under MaxAttempts+UnknownAttempts-1. Default
	// [DefaultUnknownAttempts]; 1 makes the first such verdict final.
	UnknownAttempts int
	// UnknownBackoff returns the wait before trying such a job again,
	// given its attempts in a row without a verdict so far (1 or more).
	// The job waits in the queue, out of the way of the others. Default
	// [DefaultUnknownBackoff]; it should exceed the validator's
	// FailureTTL, so that each attempt asks the DNS afresh.
	UnknownBackoff func(failures int) time.Duration
	// OutagePause is the longest wait between two questions to the
	// canary while the DNS is down. Default [DefaultOutagePause].
	OutagePause time.Duration
	// SlowAfter is how long a validation may hold its worker: after it,
	// the job waits for its answer aside and another worker takes the
	// next job, so that addresses at domains that answer slowly or never
	// do not hold up the others. The jobs of an account, or at a domain,
	// that has jobs waiting aside go aside at once. Default
	// [DefaultSlowAfter].
	SlowAfter time.Duration
	// MaxSlow bounds the jobs waiting aside, and an account's share of
	// them: with n accounts holding jobs aside, each holds at most
	// MaxSlow/(n+1), so that there is always room for another account's.
	// When either is reached, a job that would go aside at once goes
	// back to the queue for a couple of seconds instead, behind its
	// account's other jobs, without counting an attempt, and a job that
	// turned slow keeps its worker. Default 32 times Workers.
	MaxSlow int
	// Notifier wakes idle workers when jobs are enqueued. Default: the
	// queue's driver, if it implements [jobsdriver.Notifier].
	Notifier jobsdriver.Notifier
	// NewEvents, when set, builds the outbox events written in the same
	// atomic step as a job's completion: ev (written always) and batch
	// (written only by the last completion of the job's batch,
	// [jobsdriver.CompleteParams.BatchEvent]; asked on every completion, since only
	// the backend knows which one is last); nil means none. job is in its
	// completed state, with result. An error is logged and the job is
	// retried, counting a failed attempt. The webhook/jobevents package
	// provides one that writes validation.completed and batch.completed
	// events for accounts with an enabled webhook endpoint.
	NewEvents func(ctx context.Context, job Job, result emailcheck.Result) (ev, batch *webhook.Event, err error)
	// OnComplete, when set, is called after each job this pool completed,
	// with the job in its completed state. It runs on the worker's
	// goroutine, or on the group completer's when the driver is a
	// [jobsdriver.BatchCompleter], and must not block for long.
	OnComplete func(ctx context.Context, job Job)
	// AccountConcurrency, when set, returns how many jobs of an account
	// may be validated at once (its plan's concurrent jobs; 0: no bound),
	// asked at most every few seconds per account. A job of an account
	// at its bound goes back to the queue for a second or two, without
	// counting an attempt (accountslots.go).
	AccountConcurrency func(ctx context.Context, account string) int
	// AccountSlots holds the bound across the deployment's instances;
	// nil bounds each account per instance.
	AccountSlots jobsdriver.AccountSlots
	// Logger receives the pool's records. Default: discard.
	Logger *slog.Logger
}

// Pool leases jobs from a [Queue], validates them and completes them.
// Create it with [NewPool] and start it with [Pool.Run].
type Pool struct {
	q         *Queue
	v         Validator
	cfg       PoolConfig
	notifier  jobsdriver.Notifier
	logger    *slog.Logger
	running   atomic.Bool
	completed atomic.Int64
	refunded  atomic.Int64
	busy      atomic.Int64
	outage    *outage
	gate      *accountGate // nil without AccountConcurrency
}

// NewPool returns a Pool working q's jobs with v. cfg may be nil. It starts
// nothing; call [Pool.Run].
func NewPool(q *Queue, v Validator, cfg *PoolConfig) (*Pool, error) {
	if q == nil || v == nil {
		return nil, errors.New("jobs: NewPool needs a queue and a validator")
	}
	var c PoolConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Workers < 0 || c.LeaseDuration < 0 || c.HeartbeatInterval < 0 || c.PollInterval < 0 ||
		c.RescueInterval < 0 || c.MaxAttempts < 0 || c.JobTimeout < 0 || c.UnknownAttempts < 0 ||
		c.OutagePause < 0 || c.SlowAfter < 0 || c.MaxSlow < 0 {
		return nil, fmt.Errorf("jobs: negative value in PoolConfig")
	}
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, DefaultLeaseDuration)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, c.LeaseDuration/3)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.RescueInterval = cmp.Or(c.RescueInterval, c.LeaseDuration/2)
	c.CleanupInterval = cmp.Or(c.CleanupInterval, DefaultCleanupEvery)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.JobTimeout = cmp.Or(c.JobTimeout, DefaultJobTimeout)
	c.UnknownAttempts = cmp.Or(c.UnknownAttempts, DefaultUnknownAttempts)
	c.OutagePause = cmp.Or(c.OutagePause, DefaultOutagePause)
	c.SlowAfter = cmp.Or(c.SlowAfter, DefaultSlowAfter)
	c.MaxSlow = cmp.Or(c.MaxSlow, 32*c.Workers)
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.UnknownBackoff == nil {
		c.UnknownBackoff = DefaultUnknownBackoff
	}
	if c.HeartbeatInterval >= c.LeaseDuration {
		return nil, fmt.Errorf("jobs: HeartbeatInterval %v must be shorter than LeaseDuration %v", c.HeartbeatInterval, c.LeaseDuration)
	}
	n := c.Notifier
	if n == nil {
		n, _ = q.driver.(jobsdriver.Notifier)
	}
	logger := cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return &Pool{
		q:        q,
		v:        v,
		cfg:      c,
		notifier: n,
		logger:   logger,
		outage:   newOutage(c.Canary, c.OutagePause, logger),
		// A slot outlives the longest validation and its lease.
		gate: newAccountGate(&c, c.JobTimeout+c.LeaseDuration, logger),
	}, nil
}

// DNSDown reports whether the pool is pausing because the canary found
// no nameserver answering ([PoolConfig.Canary]). An address whose own
// domain does not answer never makes it true.
func (p *Pool) DNSDown() bool { return p.outage.isDown() }

// Outages returns how many times the pool paused for a DNS outage.
func (p *Pool) Outages() int64 { return p.outage.count() }

// DefaultBackoff waits 1 s after the first failure, doubling per failure up
// to 5 minutes, plus up to 10% jitter.
func DefaultBackoff(failures int) time.Duration {
	d := time.Second << min(max(failures-1, 0), 9)
	d = min(d, 5*time.Minute)
	return d + rand.N(d/10+1)
}

// Completed returns the number of jobs this pool has completed.
func (p *Pool) Completed() int64 { return p.completed.Load() }

// Refunded returns the credits this pool's completions refunded (jobs
// that ended UNKNOWN).
func (p *Pool) Refunded() int64 { return p.refunded.Load() }

// Busy returns how many jobs the pool is validating now, the slow ones
// waiting aside included ([PoolConfig.SlowAfter]): it may exceed
// [Pool.Workers] while domains are slow to answer.
func (p *Pool) Busy() int { return int(p.busy.Load()) }

// Workers returns the number of workers the pool runs.
func (p *Pool) Workers() int { return p.cfg.Workers }

// Run works jobs until ctx ends, then drains: it stops leasing, finishes
// the validations in flight, hands leased but unstarted jobs back to the
// queue, and returns nil. Run may be called once at a time.
func (p *Pool) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("jobs: pool already running")
	}
	defer p.running.Store(false)

	r := &run{
		p:        p,
		capacity: 4 * p.cfg.Workers,
		held:     make(map[string]string),
		unloaded: make(map[string]struct{}),
		aside:    make(map[string]*slowJob),
		slowDom:  make(map[string]int),
		slowAcct: make(map[string]int),
		deferSeq: make(map[string]int),
		freed:    make(chan struct{}, 1),
		wake:     make(chan struct{}, 1),
	}
	var notify <-chan struct{}
	if p.notifier != nil {
		ch, err := p.notifier.Subscribe(ctx)
		if err != nil {
			p.logger.WarnContext(ctx, "jobs: notifications unavailable, polling only", "err", err)
		} else {
			notify = ch
		}
	}

	var completer sync.WaitGroup
	if bc, ok := p.q.driver.(jobsdriver.BatchCompleter); ok {
		// Completions wait for their write outside the leases to
		// refill (see runJob): room for a few groups of them, so that
		// a slow commit grows the next group rather than stops the
		// workers.
		r.completions = make(chan completion, completionsQueued*r.capacity)
		completer.Go(func() { r.completeInGroups(ctx, bc) })
	}
	r.deferrals = make(chan deferral, r.capacity)
	var deferrer sync.WaitGroup
	deferrer.Go(func() { r.deferInGroups(ctx) })
	work := make(chan jobsdriver.Lease, r.capacity)
	r.work = work
	for range p.cfg.Workers {
		r.workers.Go(func() { r.worker(ctx) })
	}
	stopAux := make(chan struct{})
	var aux sync.WaitGroup
	aux.Go(func() { r.heartbeats(ctx, stopAux) })
	aux.Go(func() { r.every(ctx, p.cfg.RescueInterval, r.rescue) })
	if p.cfg.CleanupInterval > 0 {
		aux.Go(func() { r.every(ctx, p.cfg.CleanupInterval, r.cleanup) })
	}

	r.fetch(ctx, work, notify)
	close(work)
	r.workers.Wait()
	close(r.deferrals)
	deferrer.Wait()
	if r.completions != nil {
		close(r.completions)
		completer.Wait()
	}
	close(stopAux)
	aux.Wait()
	return nil
}

// run is the state of one Run call.
type run struct {
	p           *Pool
	capacity    int
	outstanding atomic.Int64 // leased and not yet finished, but for the jobs aside and those unloaded
	work        <-chan jobsdriver.Lease
	workers     sync.WaitGroup
	mu          sync.Mutex
	held        map[string]string   // job id → lease token, for heartbeats
	unloaded    map[string]struct{} // held jobs whose completion waits to be written: no longer outstanding
	aside       map[string]*slowJob // job id → the slow jobs waiting aside
	slowDom     map[string]int      // domain → jobs aside at it
	slowAcct    map[string]int      // account → its jobs aside
	deferSeq    map[string]int      // account → its jobs deferred since it last had none aside
	freed       chan struct{}       // a worker finished a job
	wake        chan struct{}       // rescued jobs are available
	completions chan completion     // to completeInGroups; nil without a BatchCompleter
	deferrals   chan deferral       // to deferInGroups
	// writesFailing counts the completion writes that failed in a row
	// for the store's sake (not a lease lost): while it is above zero,
	// fetch waits between leases ([run.writeBackoff]).
	writesFailing atomic.Int64
}

// maxWriteBackoff bounds the wait between leases while completion writes
// fail.
const maxWriteBackoff = 5 * time.Second

// writeBackoff is how long fetch waits before its next lease while
// completion writes fail: the poll interval, doubled for each failure in
// a row, up to maxWriteBackoff. A store that takes leases but cannot
// write their outcomes (a full disk, a broken trigger) then sees a few
// jobs now and again rather than the whole backlog validated and thrown
// away, each job held until its lease expires.
func (r *run) writeBackoff() time.Duration {
	n := r.writesFailing.Load()
	if n == 0 {
		return 0
	}
	d := r.p.cfg.PollInterval << min(n-1, 16)
	if d <= 0 || d > maxWriteBackoff {
		d = maxWriteBackoff
	}
	return d
}

// wrote records the outcome of a completion write: err is the store's
// answer for it.
func (r *run) wrote(err error) {
	switch {
	case err == nil || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound):
		if r.writesFailing.Load() != 0 {
			r.writesFailing.Store(0)
		}
	default:
		r.writesFailing.Add(1)
	}
}

// deferral is a job a worker hands back for later, for deferInGroups to
// write.
type deferral struct {
	l     jobsdriver.Lease
	runAt time.Time
}

// completion is a job a worker finished, for the group completer to
// write.
type completion struct {
	p   jobsdriver.CompleteParams
	job Job
}

// completionsQueued bounds the completions waiting to be written, and each
// group of them, at this many times the pool's capacity.
const completionsQueued = 4

// completeInGroups writes the completions workers hand it, as many in one
// call as have arrived while the previous call ran: under load
// completions share round trips (and, on PostgreSQL, a commit), and an
// idle pool adds no wait. Workers do not wait for the write: a job stays
// leased, and heartbeated, until its completion is written, so a crash
// meanwhile leaves it to be rescued, never completed twice.
func (r *run) completeInGroups(ctx context.Context, bc jobsdriver.BatchCompleter) {
	max := completionsQueued * r.capacity
	group := make([]completion, 0, max)
	params := make([]jobsdriver.CompleteParams, 0, max)
	for c := range r.completions {
		group = append(group[:0], c)
	collect:
		for len(group) < max {
			select {
			case c, ok := <-r.completions:
				if !ok {
					break collect
				}
				group = append(group, c)
			default:
				break collect
			}
		}
		params = params[:0]
		for _, c := range group {
			params = append(params, c.p)
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		errs := bc.CompleteMany(cctx, params)
		for i, c := range group {
			err := errors.New("jobs: CompleteMany returned too few results")
			if i < len(errs) {
				err = errs[i]
			}
			r.wrote(err)
			r.completed(cctx, c.job, c.p.Refund, err)
			r.release(c.job.ID)
		}
		cancel()
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// fetch leases jobs into work until ctx ends.
func (r *run) fetch(ctx context.Context, work chan<- jobsdriver.Lease, notify <-chan struct{}) {
	p := r.p
	poll := time.NewTimer(p.cfg.PollInterval)
	defer poll.Stop()
	for ctx.Err() == nil {
		// Refill only below the low-water mark, so that leases come in
		// batches rather than one job at a time.
		if int(r.outstanding.Load()) > r.capacity/2 {
			select {
			case <-ctx.Done():
			case <-r.freed:
			}
			continue
		}
		// During a DNS outage, lease nothing rather than burn the backlog:
		// wait for the canary to answer.
		if p.outage.isDown() {
			p.outage.waitUp(ctx)
			continue
		}
		// While completions cannot be written, lease now and again only.
		if d := r.writeBackoff(); d > 0 {
			poll.Reset(d)
			select {
			case <-ctx.Done():
			case <-poll.C:
			}
			if ctx.Err() != nil {
				continue
			}
		}
		want := r.capacity - int(r.outstanding.Load())
		leases, err := p.q.driver.Lease(ctx, jobsdriver.LeaseParams{Max: want, Duration: p.cfg.LeaseDuration})
		if err != nil && ctx.Err() == nil {
			p.logger.ErrorContext(ctx, "jobs: lease", "err", err)
		}
		r.outstanding.Add(int64(len(leases)))
		r.mu.Lock()
		for _, l := range leases {
			r.held[l.ID] = l.Token
		}
		r.mu.Unlock()
		for _, l := range leases {
			work <- l // never blocks: at most capacity leases are outstanding
		}
		if err == nil && len(leases) == want {
			continue
		}
		// The queue is empty (or failing): wait for news.
		poll.Reset(p.cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-notify:
		case <-r.wake:
		case <-poll.C:
		}
	}
}

// worker works leases until the channel closes, or until a job of its
// goes aside (another worker then takes its place).
func (r *run) worker(ctx context.Context) {
	for l := range r.work {
		if r.runJob(ctx, l) {
			return
		}
	}
}

// slowJob is the state of one job for the slow lane.
type slowJob struct {
	id, domain, account string
	done                bool // its worker has finished it; guarded by run.mu
	aside               bool // it went aside; guarded by run.mu
}

// runJob works one lease and reports whether the job went aside.
func (r *run) runJob(ctx context.Context, l jobsdriver.Lease) (aside bool) {
	if ctx.Err() != nil {
		r.handBack(ctx, l)
		r.release(l.ID)
		return false
	}
	if g := r.p.gate; g != nil {
		done, wait, ok := g.acquire(ctx, l)
		if !ok {
			r.deferrals <- deferral{l: l, runAt: time.Now().Add(wait)}
			return false
		}
		defer done()
	}
	j := &slowJob{id: l.ID, domain: domainOf(l.Email), account: l.AccountID}
	moved, wait := r.setAside(ctx, j, true)
	if wait {
		// Likely slow too, and the slow lane (or its account's share of
		// it) is full: back to the queue for a moment rather than hold a
		// worker. The deferrer writes it (and releases it) while the
		// worker goes on.
		r.deferrals <- deferral{l: l, runAt: time.Now().Add(r.deferralDelay(l.AccountID))}
		return false
	}
	validated := func() {}
	if !moved {
		t := time.AfterFunc(r.p.cfg.SlowAfter, func() { r.setAside(ctx, j, false) })
		defer t.Stop()
		validated = func() { t.Stop() }
	}
	handedOff := r.process(ctx, l, validated)
	r.mu.Lock()
	j.done = true
	aside = j.aside
	// A job handed to the group completer waits for no worker: it
	// leaves the leases to refill at once (while it stays held, and
	// heartbeated, until its completion is written), so that the next
	// lease and the completions' write share the time of a round trip
	// rather than wait for each other. The jobs leased ahead of the
	// queue's other accounts stay as few as before.
	_, held := r.held[l.ID]
	unload := handedOff && !aside && held
	if unload {
		r.unloaded[l.ID] = struct{}{}
	}
	r.mu.Unlock()
	if unload {
		r.outstanding.Add(-1)
		signal(r.freed)
	}
	if !handedOff { // else the group completer releases it
		r.release(l.ID)
	}
	return aside
}

// setAside moves a job still running to the slow lane, where it no longer
// counts towards the leases to refill nor holds a worker: another worker
// starts in its place. With onlyKnown, only a job that is known slow (its
// domain or its account has jobs aside) moves. It reports whether the job
// moved, and whether one that did not should wait in the queue instead
// of taking a worker: known slow while the lane, or its account's share
// of it (see slowShareLocked), is full.
func (r *run) setAside(ctx context.Context, j *slowJob, onlyKnown bool) (moved, wait bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	known := r.slowDom[j.domain] > 0 || r.slowAcct[j.account] > 0
	_, held := r.held[j.id]
	laneFull := len(r.aside) >= r.p.cfg.MaxSlow
	overShare := r.slowAcct[j.account] >= r.slowShareLocked(j.account)
	if j.done || j.aside || !held || laneFull || overShare || (onlyKnown && !known) {
		return false, known && (laneFull || overShare)
	}
	j.aside = true
	r.aside[j.id] = j
	r.slowDom[j.domain]++
	r.slowAcct[j.account]++
	r.outstanding.Add(-1)
	// Under the lock, the job's worker cannot have finished: the group's
	// count is above zero while the new worker joins it.
	r.workers.Go(func() { r.worker(ctx) })
	signal(r.freed)
	return true, false
}

// slowShareLocked is the most jobs of account the slow lane holds: an
// equal share among the accounts with jobs aside, this one included, and
// one more, so that one account's dead domains (or several accounts')
// always leave room for another account's slow job. Past it, the
// account's next jobs wait in the queue, behind its other jobs, until
// its slow ones end: the worker time an account's jobs take costs it its
// own turns, never another account's workers.
func (r *run) slowShareLocked(account string) int {
	n := len(r.slowAcct)
	if r.slowAcct[account] == 0 {
		n++
	}
	return max(1, r.p.cfg.MaxSlow/(n+1))
}

// slowDeferral is how long the first job that would go aside while the
// slow lane is full waits in the queue, plus up to half as much jitter;
// maxDeferral bounds the wait of the later ones (see deferralDelay).
const (
	slowDeferral = 2 * time.Second
	maxDeferral  = time.Minute
)

// deferralDelay is how long the next job of account deferred waits in the
// queue: the k-th deferred since the account last had no job aside waits
// slowDeferral more per share's worth before it, so that an account whose
// lookups all hang spreads its waiting jobs over the time its share of
// the slow lane takes to work through them, instead of having them all
// leased and deferred again every slowDeferral (each time taking turns,
// leases and writes from every other account).
func (r *run) deferralDelay(account string) time.Duration {
	r.mu.Lock()
	k := r.deferSeq[account]
	r.deferSeq[account] = k + 1
	share := r.slowShareLocked(account)
	r.mu.Unlock()
	d := slowDeferral + time.Duration(k/share)*slowDeferral
	return min(d, maxDeferral) + rand.N(slowDeferral/2)
}

// deferInGroups writes the deferrals workers hand it, as many in one call
// as have arrived while the previous call ran, when the driver is a
// [jobsdriver.BatchDeferrer] (else one by one), and releases their jobs. Workers do
// not wait for the write: a job stays leased, and heartbeated, until its
// deferral is written. No attempt is counted.
func (r *run) deferInGroups(ctx context.Context) {
	bd, _ := r.p.q.driver.(jobsdriver.BatchDeferrer)
	group := make([]deferral, 0, r.capacity)
	params := make([]jobsdriver.RetryParams, 0, r.capacity)
	for d := range r.deferrals {
		group = append(group[:0], d)
	collect:
		for len(group) < cap(group) {
			select {
			case d, ok := <-r.deferrals:
				if !ok {
					break collect
				}
				group = append(group, d)
			default:
				break collect
			}
		}
		params = params[:0]
		for _, d := range group {
			params = append(params, jobsdriver.RetryParams{ID: d.l.ID, Token: d.l.Token, RunAt: d.runAt})
		}
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		var errs []error
		if bd != nil && len(params) > 1 {
			errs = bd.DeferMany(hctx, params)
		} else {
			errs = make([]error, len(params))
			for i, p := range params {
				errs[i] = r.p.q.driver.Retry(hctx, p)
			}
		}
		cancel()
		for i, d := range group {
			var err error
			if i < len(errs) {
				err = errs[i]
			} else {
				err = errors.New("jobs: DeferMany returned too few results")
			}
			if err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) {
				r.p.logger.ErrorContext(ctx, "jobs: defer", "job", d.l.ID, "err", err)
			}
			r.release(d.l.ID)
		}
	}
}

// decrement lowers a count, forgetting it at zero.
func decrement(m map[string]int, k string) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// domainOf is the lower-cased domain of an address, or "" when it has
// none.
func domainOf(email string) string {
	i := strings.LastIndexByte(email, '@')
	if i < 0 {
		return ""
	}
	return strings.ToLower(email[i+1:])
}

// release forgets a job this run no longer holds.
func (r *run) release(id string) {
	r.mu.Lock()
	delete(r.held, id)
	_, unloaded := r.unloaded[id]
	delete(r.unloaded, id)
	j, aside := r.aside[id]
	if aside {
		delete(r.aside, id)
		decrement(r.slowDom, j.domain)
		decrement(r.slowAcct, j.account)
		if r.slowAcct[j.account] == 0 {
			delete(r.deferSeq, j.account)
		}
	}
	r.mu.Unlock()
	if !aside && !unloaded {
		r.outstanding.Add(-1)
	}
	signal(r.freed)
}

func (r *run) handBack(ctx context.Context, l jobsdriver.Lease) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := r.p.q.driver.Retry(hctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token})
	if err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) {
		r.p.logger.WarnContext(ctx, "jobs: hand back lease", "job", l.ID, "err", err)
	}
}

// bookkeepingTimeout bounds each call that records a job's outcome (retry,
// event, completion), separately from the validation's JobTimeout, so a
// validation that used all its time still has its outcome recorded.
const bookkeepingTimeout = 10 * time.Second

// process validates a leased job and completes it, calling validated
// once the validation has its answer: only the validation may make a
// job slow, not the writes of its outcome. It reports whether it
// handed the completion to the group completer, which then finishes the
// job's bookkeeping.
func (r *run) process(ctx context.Context, l jobsdriver.Lease, validated func()) (handedOff bool) {
	p := r.p
	p.busy.Add(1)
	defer p.busy.Add(-1)
	// The job runs to its end even when ctx ends: draining finishes it.
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.JobTimeout)
	defer cancel()

	// During an outage, a job leased before it began goes back unopened.
	if p.outage.isDown() {
		validated()
		bctx, bcancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer bcancel()
		r.putBack(bctx, l)
		return false
	}
	res, err := p.v.Validate(jctx, l.Email, emailcheck.WithSource(resultSource(l.Job)), emailcheck.WithUnreachableError(), emailcheck.WithAccount(l.AccountID))
	unanswered := errors.Is(err, emailcheck.ErrResolverUnreachable)
	if unanswered {
		err = nil
		if res.Email == "" { // a validator that gives no result with the error
			res = p.unknown(l, emailcheck.ReasonDNSTimeout)
		}
	}
	// Ask the canary whether the DNS answers at all, now (each question
	// bounded by canaryTimeout).
	dnsUp := true
	if err == nil && res.Confidence.Status == emailcheck.StatusUnknown {
		dnsUp = p.outage.answers(context.WithoutCancel(ctx))
	}
	// The outcome's bookkeeping has its own time, whatever the
	// validation and the canary took, and a slow write does not make the
	// job slow (its domain or account taken for slow ones).
	validated()
	bctx, bcancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer bcancel()
	if err == nil && res.Confidence.Status == emailcheck.StatusUnknown {
		if !dnsUp {
			// The canary is silent: the verdict says nothing of the
			// address. Back to the queue without counting an attempt;
			// the pool pauses.
			r.putBack(bctx, l)
			return false
		}
		if why := retryable(res, unanswered); why != "" {
			// The DNS answers, but gave no verdict on this domain: try
			// again later, out of the way of the other jobs.
			tries := l.Unjudged + 1
			if tries < p.cfg.UnknownAttempts && l.Errors+1 < p.cfg.MaxAttempts+p.cfg.UnknownAttempts-1 {
				msg := fmt.Sprintf("%s (unjudged attempt %d of %d)", why, tries, p.cfg.UnknownAttempts)
				r.retry(ctx, bctx, l, time.Now().Add(p.cfg.UnknownBackoff(tries)), msg, tries)
				return false
			}
		}
	}
	if err != nil {
		failures := l.Errors + 1
		if failures < p.cfg.MaxAttempts {
			r.retry(ctx, bctx, l, time.Now().Add(p.cfg.Backoff(failures)), err.Error(), 0)
			return false
		}
		p.logger.WarnContext(ctx, "jobs: attempts exhausted, completing as UNKNOWN", "job", l.ID, "err", err)
		if res.Email == "" || res.Confidence.Status != emailcheck.StatusUnknown {
			// No UNKNOWN of the validator's own came with the error.
			reason := emailcheck.ReasonDNSServfail
			if errors.Is(err, context.DeadlineExceeded) {
				reason = emailcheck.ReasonDNSTimeout
			}
			res = p.unknown(l, reason)
		}
	}
	res.Meta.Source = resultSource(l.Job)

	cp := jobsdriver.CompleteParams{ID: l.ID, Token: l.Token, Result: res, Retention: p.q.retention}
	if res.Confidence.Status == emailcheck.StatusUnknown {
		cp.Refund = l.Cost
	}
	job := l.Job
	job.State = StateCompleted
	job.Result = &res
	err = nil
	if p.cfg.NewEvents != nil {
		cp.Event, cp.BatchEvent, err = p.cfg.NewEvents(bctx, job, res)
		if job.BatchID == "" {
			cp.BatchEvent = nil
		}
	}
	if err != nil {
		if l.Errors+1 < p.cfg.MaxAttempts {
			p.logger.ErrorContext(ctx, "jobs: build event", "job", l.ID, "err", err)
			_ = p.q.driver.Retry(bctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, RunAt: time.Now().Add(p.cfg.Backoff(l.Errors + 1)), Error: err.Error()})
			return false
		}
		// A job never ends without a result: once attempts run out it
		// completes without its events rather than retrying forever.
		p.logger.ErrorContext(ctx, "jobs: build event failed on the last attempt; completing without it", "job", l.ID, "err", err)
		cp.Event, cp.BatchEvent = nil, nil
	}
	if r.completions != nil {
		r.completions <- completion{p: cp, job: job}
		return true
	}
	err = p.q.driver.Complete(bctx, cp)
	r.wrote(err)
	r.completed(bctx, job, cp.Refund, err)
	return false
}

// retryable tells why an UNKNOWN verdict may change on another attempt,
// or returns "" when it may not: no nameserver answered for the domain,
// its nameservers answered with a failure (SERVFAIL, REFUSED: a resolver
// briefly overloaded, or cut off from the domain's servers), or its mail
// servers' addresses could not be looked up (their lookups may have
// failed or timed out). An UNKNOWN the validator gives no such cause for
// is final.
func retryable(res emailcheck.Result, unanswered bool) string {
	switch {
	case unanswered || res.Reason == emailcheck.ReasonDNSTimeout:
		return "no nameserver answered for the domain"
	case res.Reason == emailcheck.ReasonDNSServfail:
		return "the domain's nameservers answered with a failure"
	case res.Reason == emailcheck.ReasonMXLookupFailed || (res.Validations.DomainExists && !res.Validations.MXRecords):
		return "the mail servers' addresses could not be looked up"
	}
	return ""
}

// unknown is the UNKNOWN result a job completes with when its attempts
// ran out without one of the validator's own: the validator's
// ([UnknownValidator]) when it can tell it, else [UnknownResult].
func (p *Pool) unknown(l jobsdriver.Lease, reason emailcheck.Reason) emailcheck.Result {
	if u, ok := p.v.(UnknownValidator); ok {
		return u.Unknown(l.Email, reason, emailcheck.WithSource(resultSource(l.Job)))
	}
	return UnknownResult(l.Email)
}

// putBack hands a job back to the queue, available at once, without
// counting an attempt.
func (r *run) putBack(ctx context.Context, l jobsdriver.Lease) {
	if err := r.p.q.driver.Retry(ctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token}); err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) {
		r.p.logger.ErrorContext(ctx, "jobs: put back", "job", l.ID, "err", err)
	}
}

// retry hands a job back to the queue for a later attempt at runAt,
// counting a failed one; unjudged is the job's count of unjudged attempts
// in a row after it (0 for a failure of another kind).
func (r *run) retry(ctx, bctx context.Context, l jobsdriver.Lease, runAt time.Time, reason string, unjudged int) {
	err := r.p.q.driver.Retry(bctx, jobsdriver.RetryParams{ID: l.ID, Token: l.Token, RunAt: runAt, Error: reason, Unjudged: unjudged})
	if err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) {
		r.p.logger.ErrorContext(ctx, "jobs: retry", "job", l.ID, "err", err)
	}
}

// completed records the outcome of a job's completion.
func (r *run) completed(ctx context.Context, job Job, refund int64, err error) {
	p := r.p
	if err != nil {
		if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) {
			// Rescued and handed to another worker, or its batch deleted.
			p.logger.DebugContext(ctx, "jobs: lease lost before completion", "job", job.ID, "err", err)
		} else {
			// The lease expires and the job is rescued and retried.
			p.logger.ErrorContext(ctx, "jobs: complete", "job", job.ID, "err", err)
		}
		return
	}
	p.completed.Add(1)
	p.refunded.Add(refund)
	if p.cfg.OnComplete != nil {
		job.CompletedAt = time.Now()
		p.cfg.OnComplete(ctx, job)
	}
}

// resultSource is the meta.source of a job's result.
func resultSource(j Job) string {
	if j.Source == SourceDashboard {
		return emailcheck.SourceDashboard
	}
	return emailcheck.SourceAPIAsync
}

// heartbeats renews held leases until stop is closed.
func (r *run) heartbeats(ctx context.Context, stop <-chan struct{}) {
	p := r.p
	t := time.NewTicker(p.cfg.HeartbeatInterval)
	defer t.Stop()
	hctx := context.WithoutCancel(ctx)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		r.mu.Lock()
		held := make([]jobsdriver.HeartbeatParams, 0, len(r.held))
		for id, tok := range r.held {
			held = append(held, jobsdriver.HeartbeatParams{ID: id, Token: tok, Duration: p.cfg.LeaseDuration})
		}
		r.mu.Unlock()
		for _, h := range held {
			// Each renewal is bounded, so one stuck call cannot let every
			// other lease expire or hold up a drain.
			cctx, cancel := context.WithTimeout(hctx, p.cfg.HeartbeatInterval)
			_, err := p.q.driver.Heartbeat(cctx, h)
			cancel()
			if err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) {
				p.logger.WarnContext(ctx, "jobs: heartbeat", "job", h.ID, "err", err)
			}
		}
	}
}

// every calls f every d until ctx ends.
func (r *run) every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

func (r *run) rescue(ctx context.Context) {
	n, err := r.p.q.RescueExpired(ctx)
	if err != nil && ctx.Err() == nil {
		r.p.logger.ErrorContext(ctx, "jobs: rescue expired leases", "err", err)
	}
	if n > 0 {
		r.p.logger.InfoContext(ctx, "jobs: rescued expired leases", "count", n)
		signal(r.wake)
	}
}

func (r *run) cleanup(ctx context.Context) {
	n, err := r.p.q.Cleanup(ctx)
	if err != nil && ctx.Err() == nil {
		r.p.logger.ErrorContext(ctx, "jobs: cleanup", "err", err)
	}
	if n > 0 {
		r.p.logger.InfoContext(ctx, "jobs: removed completed jobs past retention", "count", n)
	}
}
