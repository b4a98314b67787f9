package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSchedule is the delay before each retry, after the first attempt
// fails: six retries, seven attempts in all, over about 18 hours.
var DefaultSchedule = []time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
}

// Outcome is what happened to a delivery after an attempt.
type Outcome string

// Outcomes reported to an [Observer].
const (
	OutcomeDelivered Outcome = "delivered" // 2xx
	OutcomeRetry     Outcome = "retry"     // failed, another attempt is scheduled
	OutcomeDead      Outcome = "dead"      // failed for the last time, or nowhere to send
	OutcomeDisabled  Outcome = "disabled"  // 410 Gone: endpoint disabled, delivery dead
)

// Observer receives delivery events, for metrics. Its methods are called
// concurrently from delivery goroutines and must not block.
type Observer interface {
	// ObserveAttempt is called after each HTTP attempt.
	ObserveAttempt(ev Event, a Attempt)
	// ObserveOutcome is called after the outcome is stored.
	ObserveOutcome(ev Event, o Outcome)
}

// Config configures a [Dispatcher]. The zero value gives the documented
// defaults.
type Config struct {
	// Schedule is the delay before each retry. Nil means DefaultSchedule.
	// An event is dead after len(Schedule)+1 failed attempts.
	Schedule []time.Duration
	// Jitter spreads each retry delay uniformly by ± this fraction.
	// Zero means 0.1; negative means no jitter.
	Jitter float64
	// MaxRetryAfter caps the wait a receiver may ask for with
	// Retry-After. Zero means 24 hours.
	MaxRetryAfter time.Duration
	// Timeout bounds one attempt. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight bounds the deliveries handled at once. Zero means 64.
	MaxInFlight int
	// MaxPerEndpoint bounds the requests in flight to one endpoint URL.
	// Zero means 8. Further deliveries to a busy endpoint wait for a
	// slot, each for at most BusyDelay (and never longer than Timeout).
	// How many may wait depends on the endpoint's recent response times:
	// as many as it is expected to answer within BusyDelay, at least
	// MaxPerEndpoint and at most MaxInFlight, and at most a fair share of
	// MaxInFlight among the endpoints with deliveries. Beyond that, or
	// after waiting in vain, a delivery is put back for BusyDelay. An
	// endpoint that has not answered yet gets a quarter of MaxPerEndpoint
	// until it does; one whose attempts get no response three times in a
	// row (timeouts, refused connections) gets none for 5 s, then one
	// probe, the pause doubling up to 5 minutes while probes fail: slow
	// receivers never hold the capacity other accounts need.
	MaxPerEndpoint int
	// BusyDelay is the longest a delivery waits for a slot at a busy
	// endpoint, and how long it is put back for when it gets none,
	// without counting an attempt. Zero means one second.
	BusyDelay time.Duration
	// PollInterval is how often the outbox is checked for due events
	// when nothing else wakes the dispatcher. Zero means one second.
	PollInterval time.Duration
	// LeaseDuration is how long a delivery stays claimed. Zero means
	// 2×Timeout+30 s; it must exceed 2×Timeout (a wait for a slot, then
	// the attempt).
	LeaseDuration time.Duration
	// Retention is how long finished deliveries stay in the log before
	// Run prunes them. Zero means 7 days; negative disables pruning.
	Retention time.Duration
	// UserAgent is sent with every request. Empty means "validmail-webhook/1".
	UserAgent string
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives warnings about outbox failures. Nil discards them.
	Logger *slog.Logger
	// Observer receives delivery events. Nil means none.
	Observer Observer
}

// Dispatcher delivers the outbox. It is safe for concurrent use; several
// dispatchers, in one process or many, may share one outbox.
type Dispatcher struct {
	outbox    Outbox
	endpoints Endpoints
	client    *http.Client
	cfg       Config
	wake      chan struct{}

	mu        sync.Mutex
	active    int                // deliveries being handled
	slots     map[string]*epSlot // per endpoint URL
	lastSweep time.Time          // when idle slots were last dropped
	freed     chan struct{}      // a delivery finished
	rnd       func() float64     // uniform in [0,1)
}

// epSlot is the dispatcher's view of one endpoint URL.
type epSlot struct {
	sem      chan struct{} // capacity MaxPerEndpoint
	users    int           // in flight plus waiting
	latency  time.Duration // moving average of attempt durations; zero if unknown
	lastUsed time.Time     // when a delivery last left it

	// The endpoint's breaker: after breakerThreshold attempts in a row
	// that got no response, it gets none until openUntil, then one probe.
	failures  int
	openUntil time.Time // by the real clock; zero when closed
	probing   bool
}

// The endpoint breaker's shape: a receiver that keeps timing out or
// refusing connections costs one probe per pause, not a share of the
// dispatcher's capacity.
const (
	breakerThreshold = 3
	breakerPause     = 5 * time.Second
	breakerMaxPause  = 5 * time.Minute
)

// slotIdle is how long the state of an endpoint nobody uses is kept, so
// that a burst after a short pause starts from known response times.
const slotIdle = time.Minute

// NewDispatcher returns a Dispatcher that leases events from outbox, finds
// each account's endpoint in endpoints and posts with client. A nil client
// means NewClient with default options (public addresses only). cfg may be
// nil. It starts nothing; call Run.
func NewDispatcher(outbox Outbox, endpoints Endpoints, client *http.Client, cfg *Config) (*Dispatcher, error) {
	if outbox == nil || endpoints == nil {
		return nil, errors.New("webhook: NewDispatcher needs an outbox and endpoints")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Schedule == nil {
		c.Schedule = DefaultSchedule
	}
	c.Schedule = append([]time.Duration(nil), c.Schedule...)
	for _, d := range c.Schedule {
		if d < 0 {
			return nil, errors.New("webhook: negative delay in Config.Schedule")
		}
	}
	if c.Jitter == 0 {
		c.Jitter = 0.1
	}
	if c.Jitter >= 1 {
		return nil, errors.New("webhook: Config.Jitter must be below 1")
	}
	c.MaxRetryAfter = cmp.Or(c.MaxRetryAfter, 24*time.Hour)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.MaxInFlight = cmp.Or(c.MaxInFlight, 64)
	c.MaxPerEndpoint = cmp.Or(c.MaxPerEndpoint, 8)
	c.BusyDelay = cmp.Or(c.BusyDelay, time.Second)
	c.PollInterval = cmp.Or(c.PollInterval, time.Second)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, 2*c.Timeout+30*time.Second)
	c.Retention = cmp.Or(c.Retention, 7*24*time.Hour)
	c.UserAgent = cmp.Or(c.UserAgent, "validmail-webhook/1")
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Timeout < 0, c.MaxInFlight < 0, c.MaxPerEndpoint < 0, c.BusyDelay < 0, c.PollInterval < 0:
		return nil, errors.New("webhook: negative value in Config")
	case c.LeaseDuration <= 2*c.Timeout:
		return nil, errors.New("webhook: Config.LeaseDuration must exceed twice Config.Timeout")
	}
	if client == nil {
		var err error
		if client, err = NewClient(ClientOptions{Timeout: c.Timeout}); err != nil {
			return nil, err
		}
	}
	return &Dispatcher{
		outbox:    outbox,
		endpoints: endpoints,
		client:    client,
		cfg:       c,
		wake:      make(chan struct{}, 1),
		freed:     make(chan struct{}, 1),
		slots:     map[string]*epSlot{},
		rnd:       rand.Float64,
	}, nil
}

// Notify wakes Run to look for due events now rather than at the next
// poll, for example right after an event is enqueued. It never blocks.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers due events until ctx is done. Then it stops leasing,
// puts back deliveries still waiting for an endpoint slot, lets requests
// in flight finish (each within Timeout) and records their outcome, and
// returns nil. Run may be called once per Dispatcher at a time.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ticker := time.NewTicker(d.cfg.PollInterval)
	defer ticker.Stop()
	var lastPrune time.Time
	for {
		more := d.poll(ctx, &wg)
		if d.cfg.Retention > 0 && d.cfg.Now().Sub(lastPrune) >= time.Hour {
			lastPrune = d.cfg.Now()
			if n, err := d.outbox.Prune(ctx, lastPrune.Add(-d.cfg.Retention)); err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("webhook: pruning the outbox", "err", err)
			} else if n > 0 {
				d.cfg.Logger.Debug("webhook: pruned finished deliveries", "count", n)
			}
		}
		if more {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-d.wake:
		case <-d.freed:
			if !d.awaitRoom(ctx, ticker.C) {
				return nil
			}
		}
	}
}

// awaitRoom returns once enough deliveries have finished to make a lease
// worth it, or the poll ticker or Notify fires. While plenty are still
// being handled it leases in batches rather than one by one. It reports
// false when ctx is done.
func (d *Dispatcher) awaitRoom(ctx context.Context, tick <-chan time.Time) bool {
	for d.free() < d.lowWater() {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		case <-d.wake:
			return true
		case <-d.freed:
		}
	}
	return true
}

// free returns how many more deliveries may be handled at once.
func (d *Dispatcher) free() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.MaxInFlight - d.active
}

// lowWater is the number of free places that makes a finished delivery
// worth a lease.
func (d *Dispatcher) lowWater() int {
	return max(1, d.cfg.MaxInFlight/4)
}

// poll leases as many due deliveries as there are free slots and starts
// a goroutine for each. It reports whether it filled every slot, which
// means more may be due.
func (d *Dispatcher) poll(ctx context.Context, wg *sync.WaitGroup) bool {
	if ctx.Err() != nil {
		return false
	}
	d.sweep()
	free := d.free()
	if free <= 0 {
		return false
	}
	ds, err := d.outbox.Lease(ctx, LeaseParams{Now: d.cfg.Now(), Limit: free, Duration: d.cfg.LeaseDuration})
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.Warn("webhook: leasing from the outbox", "err", err)
		}
		return false
	}
	d.mu.Lock()
	d.active += len(ds)
	d.mu.Unlock()
	for _, del := range ds {
		wg.Go(func() {
			defer d.done()
			d.handle(ctx, del)
		})
	}
	return len(ds) == free
}

func (d *Dispatcher) done() {
	d.mu.Lock()
	d.active--
	d.mu.Unlock()
	select {
	case d.freed <- struct{}{}:
	default:
	}
}

// handle makes one attempt for a leased delivery and stores the outcome.
// ctx is Run's context: once it is done, a delivery not yet sent is put
// back, one being sent is finished.
func (d *Dispatcher) handle(ctx context.Context, del Delivery) {
	bg := context.WithoutCancel(ctx)
	log := d.cfg.Logger.With("event_id", del.ID, "account_id", del.AccountID)
	ep, err := d.endpoints.GetEndpoint(ctx, del.AccountID)
	switch {
	case errors.Is(err, ErrNotFound):
		d.finish(bg, log, del, OutcomeDead, "no webhook endpoint configured")
		return
	case err != nil:
		next := d.cfg.Now()
		if ctx.Err() == nil {
			log.Warn("webhook: reading the endpoint", "err", err)
			next = next.Add(d.cfg.BusyDelay)
		}
		d.putBack(bg, log, del, next)
		return
	case !ep.Enabled:
		d.finish(bg, log, del, OutcomeDead, "webhook endpoint disabled")
		return
	}

	if wait, ok := d.admit(ep.URL); !ok {
		// The endpoint keeps failing: no attempt until its pause ends,
		// and none counted.
		d.putBack(bg, log, del, d.cfg.Now().Add(wait))
		return
	}
	release, ok := d.acquire(ctx, ep.URL)
	if !ok {
		// Saturated endpoint or stopping: try again later, no attempt counted.
		next := d.cfg.Now()
		if ctx.Err() == nil {
			next = next.Add(d.putBackDelay(ep.URL))
		}
		d.putBack(bg, log, del, next)
		return
	}
	actx, cancel := context.WithTimeout(bg, d.cfg.Timeout)
	att, retryAfter := d.send(actx, ep, del.Event)
	cancel()
	release(att.Duration)
	d.record(ep.URL, att)

	if d.cfg.Observer != nil {
		d.cfg.Observer.ObserveAttempt(del.Event, att)
	}
	if err := d.outbox.RecordAttempt(bg, del.Lease, att); err != nil {
		log.Warn("webhook: recording an attempt", "err", err)
		return // the lease will expire and the delivery will be tried again
	}
	n := len(del.Attempts) + 1
	switch {
	case att.StatusCode >= 200 && att.StatusCode < 300:
		if err := d.outbox.MarkDelivered(bg, del.Lease, d.cfg.Now()); err != nil {
			log.Warn("webhook: marking delivered", "err", err)
			return
		}
		d.observe(del.Event, OutcomeDelivered)
	case att.StatusCode == http.StatusGone:
		err := d.endpoints.DisableEndpoint(bg, DisableEndpointParams{
			AccountID: del.AccountID,
			URL:       ep.URL,
			Reason:    "the endpoint answered 410 Gone",
			Now:       d.cfg.Now(),
		})
		if err != nil && !errors.Is(err, ErrEndpointChanged) && !errors.Is(err, ErrNotFound) {
			log.Warn("webhook: disabling the endpoint", "err", err)
		}
		d.finish(bg, log, del, OutcomeDisabled, "the endpoint answered 410 Gone and was disabled")
	case n > len(d.cfg.Schedule):
		d.finish(bg, log, del, OutcomeDead, fmt.Sprintf("no success after %d attempts", n))
	default:
		delay := d.jitter(d.cfg.Schedule[n-1])
		if retryAfter > delay {
			delay = min(retryAfter, d.cfg.MaxRetryAfter)
		}
		if err := d.outbox.Reschedule(bg, del.Lease, d.cfg.Now().Add(delay)); err != nil {
			log.Warn("webhook: rescheduling", "err", err)
			return
		}
		d.observe(del.Event, OutcomeRetry)
	}
}

func (d *Dispatcher) finish(ctx context.Context, log *slog.Logger, del Delivery, o Outcome, reason string) {
	if err := d.outbox.MarkDead(ctx, del.Lease, d.cfg.Now(), reason); err != nil {
		log.Warn("webhook: marking dead", "err", err)
		return
	}
	d.observe(del.Event, o)
}

func (d *Dispatcher) putBack(ctx context.Context, log *slog.Logger, del Delivery, next time.Time) {
	if err := d.outbox.Reschedule(ctx, del.Lease, next); err != nil {
		log.Warn("webhook: putting a delivery back", "err", err)
	}
}

func (d *Dispatcher) observe(ev Event, o Outcome) {
	if d.cfg.Observer != nil {
		d.cfg.Observer.ObserveOutcome(ev, o)
	}
}

// acquire waits for a request slot for url, for at most BusyDelay (or
// Timeout, if shorter: the lease must outlast the wait and the attempt).
// It fails at once when the endpoint already has as many deliveries as
// waitLimit allows, and when ctx ends while waiting. release takes the
// attempt's duration, which feeds the endpoint's response-time average.
func (d *Dispatcher) acquire(ctx context.Context, url string) (release func(time.Duration), ok bool) {
	d.mu.Lock()
	s := d.slots[url]
	if s == nil {
		s = &epSlot{sem: make(chan struct{}, d.cfg.MaxPerEndpoint)}
		d.slots[url] = s
	}
	if s.users >= d.waitLimit(s) {
		d.mu.Unlock()
		return nil, false
	}
	s.users++
	d.mu.Unlock()
	leave := func(took time.Duration) {
		d.mu.Lock()
		s.users--
		s.lastUsed = time.Now()
		if took > 0 {
			if s.latency == 0 {
				s.latency = took
			} else {
				s.latency += (took - s.latency) / 8
			}
		}
		d.mu.Unlock()
	}
	select {
	case s.sem <- struct{}{}:
		return func(took time.Duration) { <-s.sem; leave(took) }, true
	default:
	}
	wait := time.NewTimer(min(d.cfg.BusyDelay, d.cfg.Timeout))
	defer wait.Stop()
	select {
	case s.sem <- struct{}{}:
		return func(took time.Duration) { <-s.sem; leave(took) }, true
	case <-wait.C:
	case <-ctx.Done():
	}
	leave(0)
	return nil, false
}

// warmUpDelay is how long a delivery refused by an endpoint that has not
// answered yet is put back for: its first answer, usually a few
// milliseconds away, opens it to many more, and a burst should not wait a
// whole BusyDelay for that.
const warmUpDelay = 100 * time.Millisecond

// putBackDelay is how long a delivery refused a slot at url waits before
// it is due again.
func (d *Dispatcher) putBackDelay(url string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.slots[url]; s != nil && s.latency == 0 && s.failures == 0 {
		return min(warmUpDelay, d.cfg.BusyDelay)
	}
	return d.cfg.BusyDelay
}

// admit consults the endpoint's breaker: while it is open no delivery may
// go (ok false, and how long to wait); once its pause is over, one probe
// may.
func (d *Dispatcher) admit(url string) (wait time.Duration, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.slots[url]
	if s == nil || s.openUntil.IsZero() {
		return 0, true
	}
	now := time.Now()
	switch {
	case now.Before(s.openUntil):
		return s.openUntil.Sub(now), false
	case s.probing:
		return d.cfg.BusyDelay, false
	}
	s.probing = true
	return 0, true
}

// record feeds an attempt's outcome to the endpoint's breaker: any
// response closes it; a timeout or a failed connection counts towards
// opening it, for a pause that doubles with each failed probe.
func (d *Dispatcher) record(url string, att Attempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.slots[url]
	if s == nil {
		return
	}
	s.probing = false
	if att.StatusCode != 0 {
		s.failures, s.openUntil = 0, time.Time{}
		return
	}
	if att.Error != ReasonTimeout && att.Error != ReasonConnectionFailed {
		return
	}
	s.failures++
	if s.failures >= breakerThreshold {
		pause := min(breakerPause<<min(s.failures-breakerThreshold, 10), breakerMaxPause)
		s.openUntil = time.Now().Add(pause)
	}
}

// waitLimit is how many deliveries, in flight and waiting, one endpoint
// may hold. An endpoint that has not answered yet, or whose last attempts
// got no response, gets a quarter of MaxPerEndpoint and no waiting. One
// that answers gets MaxPerEndpoint in flight plus as many as it is
// expected to answer within BusyDelay, judged by its average response
// time, between 2×MaxPerEndpoint and MaxInFlight, and never more than its
// fair share: MaxInFlight split between the endpoints with deliveries.
// d.mu must be held.
func (d *Dispatcher) waitLimit(s *epSlot) int {
	if s.latency == 0 || s.failures > 0 {
		// Not yet known to answer, or failing: a small share, no waiting,
		// until it proves itself. A receiver that never answers then holds
		// a few requests, not the dispatcher.
		return max(1, d.cfg.MaxPerEndpoint/4)
	}
	n, lo, hi := d.cfg.MaxInFlight, 2*d.cfg.MaxPerEndpoint, max(d.cfg.MaxInFlight, 2*d.cfg.MaxPerEndpoint)
	if s.latency > 0 {
		answered := float64(d.cfg.MaxPerEndpoint) * float64(d.cfg.BusyDelay) / float64(s.latency)
		n = d.cfg.MaxPerEndpoint + int(min(answered, float64(hi)))
	}
	n = min(max(n, lo), hi)
	// A fair share: the endpoints with deliveries split the dispatcher's
	// capacity, so slow receivers cannot hold all of it between them.
	busy := 1
	for _, o := range d.slots {
		if o != s && o.users > 0 {
			busy++
		}
	}
	return max(1, min(n, d.cfg.MaxInFlight/busy))
}

// sweep forgets endpoints that have been idle for a while, at most once
// per slotIdle.
func (d *Dispatcher) sweep() {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Sub(d.lastSweep) < slotIdle {
		return
	}
	d.lastSweep = now
	for url, s := range d.slots {
		if s.users == 0 && now.Sub(s.lastUsed) >= slotIdle {
			delete(d.slots, url)
		}
	}
}

func (d *Dispatcher) jitter(delay time.Duration) time.Duration {
	if d.cfg.Jitter <= 0 || delay <= 0 {
		return delay
	}
	f := 1 + d.cfg.Jitter*(2*d.rnd()-1)
	return time.Duration(float64(delay) * f)
}

// Send makes one signed attempt to deliver ev to ep, with the
// Dispatcher's client, clock and timeout, outside the outbox: for test
// messages. It signs with every secret in ep.SigningSecrets. Failure is
// reported in the Attempt (StatusCode outside 2xx, or Error).
func (d *Dispatcher) Send(ctx context.Context, ep Endpoint, ev Event) Attempt {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	a, _ := d.send(ctx, ep, ev)
	return a
}

// send posts ev to ep and returns the attempt and the delay the receiver
// asked for with Retry-After (zero if none).
func (d *Dispatcher) send(ctx context.Context, ep Endpoint, ev Event) (Attempt, time.Duration) {
	start := d.cfg.Now()
	att := Attempt{At: start, URL: ep.URL}
	signer, err := NewSigner(ep.SigningSecrets(start)...)
	if err != nil {
		d.cfg.Logger.Error("webhook: signing", "account_id", ep.AccountID, "err", err)
		att.Error = ReasonInternal
		return att, 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(ev.Payload))
	if err != nil {
		att.Error = ReasonInvalidURL
		return att, 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	signer.SetHeaders(req.Header, ev.ID, start, ev.Payload)

	t0 := time.Now()
	resp, err := d.client.Do(req)
	att.Duration = time.Since(t0)
	if err != nil {
		att.Error = reason(ctx, err)
		// The details (addresses, refusals, routes) stay in our logs: shown
		// to customers they would map our network.
		d.cfg.Logger.Info("webhook: delivery failed", "account_id", ep.AccountID, "event_id", ev.ID,
			"reason", att.Error, "err", describe(ctx, err, d.cfg.Timeout))
		return att, 0
	}
	// Drain a little so the connection can be reused, then close.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	att.StatusCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	default: // redirects are not followed either
		att.Error = ReasonHTTPStatus
	}
	return att, parseRetryAfter(resp.Header.Get("Retry-After"), d.cfg.Now())
}

// Reasons an [Attempt] failed, as customers see them: stable and coarse,
// so that delivery logs cannot be used to map the network the dispatcher
// runs in.
const (
	// ReasonBlockedAddress: the endpoint resolves to an address the client
	// may not reach (private, loopback, ...).
	ReasonBlockedAddress = "blocked_address"
	// ReasonTimeout: no response within the timeout.
	ReasonTimeout = "timeout"
	// ReasonConnectionFailed: no HTTP response: the name did not resolve,
	// the connection was refused or reset, TLS failed.
	ReasonConnectionFailed = "connection_failed"
	// ReasonHTTPStatus: the endpoint answered with a status outside 2xx
	// (a redirect included); the attempt's StatusCode says which.
	ReasonHTTPStatus = "http_status"
	// ReasonInvalidURL: the endpoint's URL cannot be requested.
	ReasonInvalidURL = "invalid_url"
	// ReasonInternal: the dispatcher could not build the request.
	ReasonInternal = "internal"
)

// reason maps a client error to its coarse Reason*.
func reason(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	case errors.Is(err, ErrAddressNotAllowed):
		return ReasonBlockedAddress
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ReasonTimeout
	}
	return ReasonConnectionFailed
}

// describe turns a client error into a short text for our logs.
func describe(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return "timed out after " + timeout.String()
	}
	if errors.Is(err, ErrAddressNotAllowed) {
		return ErrAddressNotAllowed.Error()
	}
	// The URL is in the Attempt already; keep the cause only.
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// parseRetryAfter reads a Retry-After value, either delay-seconds or an
// HTTP date, as a delay from now. It returns zero for an empty, invalid
// or past value.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		const maxSeconds = int64(1<<63-1) / int64(time.Second)
		return time.Duration(min(n, maxSeconds)) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d := t.Sub(now); d > 0 {
		return d
	}
	return 0
}
