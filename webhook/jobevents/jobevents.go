// Package jobevents connects the job queue to webhooks: for accounts
// whose enabled endpoint receives them, it asks the webhook package for
// the validation.completed event that a job's completion writes to the
// webhook outbox and the batch.completed event that a batch's last
// completion writes, and it wakes the dispatcher once they are written.
//
// The events are [webhook.Event] values from completion to delivery; the
// webhook package alone makes their bytes. A host wires a Builder into its
// worker pool with one call:
//
//	events, err := jobevents.New(endpoints, &jobevents.Config{Dispatcher: dispatcher})
//	...
//	pcfg := jobs.PoolConfig{Workers: 8}
//	events.Attach(&pcfg)
//	pool, err := jobs.NewPool(queue, validator, &pcfg)
//
// The backend's [jobsdriver.Driver] then stores the events as pending
// deliveries in the same atomic step that completes the job, and the
// [webhook.Dispatcher] delivers them at once rather than at its next
// poll. The Builder remembers for a while whether an account has an
// enabled endpoint; [Builder.Forget] is the hook that an endpoint changed,
// which the API and the console take as their EndpointChanged
// (httpapi.Config, dashboard.Config).
package jobevents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/webhook"
)

// DefaultTTL is how long an account's endpoint state is cached by default.
const DefaultTTL = 5 * time.Second

// maxCached bounds the cache; past it, expired entries are swept.
const maxCached = 10_000

// Waker is woken after a completion that may have written events; a
// [*webhook.Dispatcher] is one. (It is not the job queue's
// jobsdriver.Notifier, which a driver implements to signal new jobs.)
type Waker interface {
	// Notify asks for due events to be delivered now. It must not block.
	Notify()
}

// Config configures a [Builder]. The zero value gives the defaults.
type Config struct {
	// TTL is how long the Builder remembers whether an account has an
	// enabled endpoint. An endpoint created, enabled or removed takes up
	// to TTL to be noticed, unless the host calls [Builder.Forget]. Zero
	// means [DefaultTTL]; negative disables the cache.
	TTL time.Duration
	// Now is the clock that stamps events and expires the cache. Nil
	// means time.Now.
	Now func() time.Time
	// Dispatcher, when set, is woken by [Builder.Completed] after each
	// completion of a job whose account has an enabled endpoint, so that
	// its events go out at once rather than at the dispatcher's next
	// poll.
	Dispatcher Waker
	// IsList tells whether a batch is a list (uploaded whole): by
	// default its jobs write no validation.completed event, only its
	// batch.completed ([webhook.Endpoint.WantsListAddresses]). Nil: no
	// batch is a list. Its answers are remembered per batch.
	IsList func(ctx context.Context, accountID, batchID string) (bool, error)
}

// Builder builds outbox events for completed jobs. It is safe for
// concurrent use. Create it with [New].
type Builder struct {
	endpoints webhook.Endpoints
	ttl       time.Duration
	now       func() time.Time
	waker     Waker
	isList    func(ctx context.Context, accountID, batchID string) (bool, error)

	mu    sync.Mutex
	cache map[string]cached // account id → endpoint state
	lists map[string]bool   // batch id → whether a list
}

type cached struct {
	endpoint *webhook.Endpoint // nil: no enabled endpoint
	expires  time.Time
}

// New returns a Builder that looks accounts' endpoints up in endpoints.
// cfg may be nil.
func New(endpoints webhook.Endpoints, cfg *Config) (*Builder, error) {
	if endpoints == nil {
		return nil, errors.New("jobevents: New needs endpoints")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Builder{
		endpoints: endpoints,
		ttl:       cmp.Or(c.TTL, DefaultTTL),
		now:       c.Now,
		waker:     c.Dispatcher,
		isList:    c.IsList,
		cache:     make(map[string]cached),
		lists:     make(map[string]bool),
	}, nil
}

// Attach wires the Builder into a worker pool's configuration: cfg's
// NewEvents becomes [Builder.NewEvents], and its OnComplete calls
// [Builder.Completed] before the hook cfg already had, if any.
func (s *Builder) Attach(cfg *jobs.PoolConfig) {
	cfg.NewEvents = s.NewEvents
	host := cfg.OnComplete
	cfg.OnComplete = func(ctx context.Context, job jobs.Job) {
		s.Completed(ctx, job)
		if host != nil {
			host(ctx, job)
		}
	}
}

// NewEvents has the signature of [jobs.PoolConfig.NewEvents]: it looks
// the job's account's endpoint up once and returns the events the
// endpoint receives, each with a new id and stamped now. ev is a
// [webhook.TypeValidationCompleted] event ([webhook.NewEvent]) whose
// payload is
//
//	{"type":"validation.completed","timestamp":"…","data":{"job_id":"…","result":{…}}}
//
// with result as the API encodes it; batch is a
// [webhook.TypeBatchCompleted] event ([webhook.NewBatchEvent]) that the
// backend writes only if the job is its batch's last, with the payload
// [webhook.BatchCompletedPayload] gives for the batch's final counts:
//
//	{"type":"batch.completed","timestamp":"…","data":{"batch_id":"…","total":n,"counts":{…}}}
//
// Either is nil when the account has no enabled endpoint or its endpoint
// does not receive that type (batch also for a job without a batch); ev
// also for a job of a list ([Config.IsList]) unless the endpoint names
// validation.completed ([webhook.Endpoint.WantsListAddresses]). An
// error looking the endpoint up is returned, so the pool retries the job
// rather than completing it without its events.
func (s *Builder) NewEvents(ctx context.Context, job jobs.Job, result emailcheck.Result) (ev, batch *webhook.Event, err error) {
	ep, err := s.endpoint(ctx, job.AccountID)
	if err != nil || ep == nil {
		return nil, nil, err
	}
	now := s.now()
	perAddress := ep.Wants(webhook.TypeValidationCompleted)
	if perAddress && !ep.WantsListAddresses() && job.BatchID != "" {
		list, err := s.list(ctx, job)
		if err != nil {
			return nil, nil, err
		}
		perAddress = !list
	}
	if perAddress {
		body, err := json.Marshal(result)
		if err != nil {
			return nil, nil, fmt.Errorf("jobevents: encoding the result of job %s: %w", job.ID, err)
		}
		e, err := webhook.NewEvent(job.AccountID, job.ID, body, now)
		if err != nil {
			return nil, nil, err
		}
		ev = &e
	}
	if job.BatchID != "" && ep.Wants(webhook.TypeBatchCompleted) {
		e := webhook.NewBatchEvent(job.AccountID, job.ID, now)
		batch = &e
	}
	return ev, batch, nil
}

// list tells whether the job's batch is a list, remembering the answer.
func (s *Builder) list(ctx context.Context, job jobs.Job) (bool, error) {
	if s.isList == nil {
		return false, nil
	}
	s.mu.Lock()
	l, ok := s.lists[job.BatchID]
	s.mu.Unlock()
	if ok {
		return l, nil
	}
	l, err := s.isList(ctx, job.AccountID, job.BatchID)
	if err != nil {
		return false, fmt.Errorf("jobevents: is batch %s a list: %w", job.BatchID, err)
	}
	s.mu.Lock()
	if len(s.lists) >= maxCached {
		clear(s.lists)
	}
	s.lists[job.BatchID] = l
	s.mu.Unlock()
	return l, nil
}

// Completed wakes the Config's Dispatcher after the job's completion,
// unless the Builder knows the job's account to have no enabled endpoint
// (so the completion wrote no event). It has the signature of
// [jobs.PoolConfig.OnComplete] and never blocks.
func (s *Builder) Completed(_ context.Context, job jobs.Job) {
	if s.waker == nil {
		return
	}
	if s.ttl > 0 {
		s.mu.Lock()
		c, ok := s.cache[job.AccountID]
		s.mu.Unlock()
		if ok && c.endpoint == nil && s.now().Before(c.expires) {
			return
		}
	}
	s.waker.Notify()
}

// Forget drops what the Builder remembers about the account's endpoint,
// so the next completion looks it up again. Call it after changing the
// endpoint through the same process.
func (s *Builder) Forget(accountID string) {
	s.mu.Lock()
	delete(s.cache, accountID)
	s.mu.Unlock()
}

// endpoint returns the account's endpoint if it is enabled (only its
// Enabled and Events), nil if it has none or it is disabled.
func (s *Builder) endpoint(ctx context.Context, account string) (*webhook.Endpoint, error) {
	now := s.now()
	if s.ttl > 0 {
		s.mu.Lock()
		c, ok := s.cache[account]
		s.mu.Unlock()
		if ok && now.Before(c.expires) {
			return c.endpoint, nil
		}
	}
	ep, err := s.endpoints.GetEndpoint(ctx, account)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("jobevents: looking up the endpoint of account %s: %w", account, err)
	}
	var on *webhook.Endpoint
	if err == nil && ep.Enabled {
		on = &webhook.Endpoint{Enabled: true, Events: ep.Events}
	}
	if s.ttl > 0 {
		s.mu.Lock()
		if len(s.cache) >= maxCached {
			for a, c := range s.cache {
				if !now.Before(c.expires) {
					delete(s.cache, a)
				}
			}
		}
		s.cache[account] = cached{endpoint: on, expires: now.Add(s.ttl)}
		s.mu.Unlock()
	}
	return on, nil
}

// listLimit bounds the deliveries [List] reads.
const listLimit = 100_000

// List returns the job events in the account's outbox as completions
// wrote them, oldest first, for any backend whose outbox is a
// [webhook.Outbox]. Test events (no job id) are left out.
func List(ctx context.Context, outbox webhook.Outbox, accountID string) ([]webhook.Event, error) {
	ds, err := outbox.Deliveries(ctx, webhook.ListParams{AccountID: accountID, Limit: listLimit})
	if err != nil {
		return nil, err
	}
	out := make([]webhook.Event, 0, len(ds))
	for _, d := range slices.Backward(ds) {
		if d.JobID == "" {
			continue
		}
		out = append(out, d.Event)
	}
	return out, nil
}
